import { Injectable } from '@nestjs/common';
import { ModerationRepository } from './moderation.repository.js';

/** The wire and HTTP text of a ban, as AUTH and EVENT already say it (relay.md §2.5, §5.2). */
export const BANNED_REASON = 'blocked: you are banned from this community';

/**
 * The ban check for reads (REQ, COUNT, `/query`, `/count`). A timeout is a write block only
 * (relay.md §2.9) and does not refuse a read.
 */
@Injectable()
export class BanGate {
  constructor(private readonly moderation: ModerationRepository) {}

  /**
   * True when the pubkey, or the NIP-OA owner its session proved (an owner's ban cascades to the
   * agent), is banned in the community. A writer read every time, like the AUTH and EVENT gates:
   * concurrent lookups share statements (ModerationRepository.restrictionOf); `fresh` sees every
   * ban committed before the call. Errors propagate so callers fail closed.
   */
  async isBanned(communityId: string, pubkey: string, owner?: string, opts: { fresh?: boolean } = {}): Promise<boolean> {
    const subjects = owner === undefined || owner === pubkey ? [pubkey] : [pubkey, owner];
    const states = await Promise.all(subjects.map((s) => this.moderation.restrictionOf(communityId, s, opts)));
    return states.some((r) => r.kind === 'banned');
  }
}
