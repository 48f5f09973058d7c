/**
 * NIP-56 reports, kind 1984 (relay.md §1.3 "moderator queue only; never stored publicly", §5.2
 * step 7): a report is validated, queued in `moderation_reports` for the community's moderators
 * and answered `OK true`; it is never stored as an event nor fanned out. Re-sending the same report
 * queues nothing new. Targets resolve in this community only: an `e` target must be a live event
 * here (its author becomes the reported key and its channel is recorded); a `p`-only report names
 * a key. A target the reporter cannot read is "not found", like a missing one. An `x` (media blob) target cannot resolve: this relay keeps no media.
 */
import { Injectable } from '@nestjs/common';
import { NostrEvent } from '../nostr/nostr.types.js';
import { ModerationQueueRepository, NewReport } from '../moderation/moderation-queue.repository.js';
import { EventWriteRepository } from '../events/event-write.repository.js';
import { reject } from '../nostr/refusal.js';
import { TARGET_NOT_FOUND } from '../events/ingest.refusals.js';
import { REPORT_REFUSALS } from './report.refusals.js';
import { TargetVisibility } from '../events/target-visibility.service.js';
import { lowerHex64 } from '../nostr/hex.js';
import { KIND, REPORT_KINDS } from '../nostr/kinds.js';
import type { EventCommand } from '../events/command-registry.js';

/** NIP-56 report types, the third element of the target tag. */
export const REPORT_TYPES: ReadonlySet<string> = new Set(['illegal', 'nudity', 'malware', 'spam', 'impersonation', 'profanity', 'other']);
const NOTE_MAX = 4096;

@Injectable()
export class ReportIntake implements EventCommand {
  readonly kinds = REPORT_KINDS;

  constructor(
    private readonly queue: ModerationQueueRepository,
    private readonly events: EventWriteRepository,
    private readonly targets: TargetVisibility,
  ) {}

  /** Queues the report; resolves with the OK message or throws a Rejection. */
  async execute(communityId: string, event: NostrEvent): Promise<string> {
    const p = tagsNamed(event, 'p');
    if (p.length === 0) reject(REPORT_REFUSALS.pTagMissing);
    if (p.length > 1) reject(REPORT_REFUSALS.pTagNotOne);
    const reported = hex32(p[0][1], 'p tag pubkey');
    const e = tagsNamed(event, 'e');
    const x = tagsNamed(event, 'x');
    if (e.length > 0 && x.length > 0) reject(REPORT_REFUSALS.eAndX);
    if (e.length > 1) reject(REPORT_REFUSALS.eTagNotOne);
    if (x.length > 1) reject(REPORT_REFUSALS.xTagNotOne);
    const base = { reportEventId: event.id, reporterPubkey: event.pubkey, note: event.content === '' ? null : event.content.slice(0, NOTE_MAX) };
    let report: NewReport;
    if (e.length === 1) {
      const targetEventId = hex32(e[0][1], 'e tag event id');
      const reportType = reportTypeOf(e[0]);
      // A target in a channel the reporter cannot read answers exactly like a missing one.
      const target = await this.queue.withWriter('authorization', async (db) => this.targets.seen(db, communityId, event.pubkey, await this.events.findKindTarget(db, communityId, targetEventId)));
      if (target === undefined) reject(TARGET_NOT_FOUND.report);
      report = { ...base, targetKind: 'event', targetPubkey: target.pubkey, targetEventId, channelId: target.channelId, reportType };
    } else if (x.length === 1) {
      hex32(x[0][1], 'x tag sha256');
      reportTypeOf(x[0]);
      return reject(REPORT_REFUSALS.blobNotFound);
    } else {
      report = { ...base, targetKind: 'pubkey', targetPubkey: reported, targetEventId: null, channelId: null, reportType: reportTypeOf(p[0]) };
    }
    await this.queue.insertReport(communityId, report);
    return '';
  }
}

function tagsNamed(event: NostrEvent, name: string): string[][] {
  return event.tags.filter((t) => t.length >= 2 && t[0] === name);
}

function hex32(value: string, label: string): string {
  const hex = lowerHex64(value);
  if (hex === undefined) reject(REPORT_REFUSALS.malformed(label));
  return hex;
}

function reportTypeOf(tag: string[]): string {
  const type = tag[2];
  if (type === undefined) reject(REPORT_REFUSALS.typeMissing);
  if (!REPORT_TYPES.has(type)) reject(REPORT_REFUSALS.unsupportedType(type));
  return type;
}
