/**
 * 9033, the workspace profile: owners and admins set the workspace icon and the community's thread
 * display (`thread_replies_in_channel`, NIP-CW). It changes the community's record only (no event
 * is signed for it). Other pods' NIP-11 shows a new icon within their 10 s host cache; this pod's
 * at once.
 */
import { Injectable, Logger } from '@nestjs/common';
import { NostrEvent } from '../nostr/nostr.types.js';
import { reject } from '../nostr/refusal.js';
import { RelayAuthority } from '../moderation/relay-authority.service.js';
import { CommunityRepository, WorkspaceProfile } from '../tenancy/community.repository.js';
import { TenancyService } from '../tenancy/tenancy.service.js';
import { EventWriter } from '../events/event-writer.service.js';
import { Actor, authorityOf } from './actor.js';
import { tagValue } from './command-input.js';
import { RELAY_ADMIN_REFUSALS } from './relay-admin.refusals.js';

const ICON_URL_MAX = 2048;
const ICON_DATA_URL_MAX = 98_304;
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

@Injectable()
export class WorkspaceProfiles {
  /** The relay-admin commands' logger name: the log line is theirs. */
  private readonly logger = new Logger('RelayAdminCommands');

  constructor(
    private readonly writer: EventWriter,
    private readonly authority: RelayAuthority,
    private readonly communities: CommunityRepository,
    private readonly tenancy: TenancyService,
  ) {}

  async set(communityId: string, actor: Actor, profile: WorkspaceProfile, claim?: () => Promise<void>): Promise<string> {
    await this.writer.transaction(false, async (tx) => {
      const who = await authorityOf(this.authority, tx, communityId, actor);
      if (who !== 'owner' && who !== 'admin') reject(RELAY_ADMIN_REFUSALS.notAdmin);
      await claim?.();
      await this.communities.setProfile(tx, communityId, profile);
    });
    this.tenancy.forget(communityId);
    this.logger.log({ communityId, icon: profile.icon === undefined ? 'kept' : profile.icon === null ? 'cleared' : 'set', threadRepliesInChannel: profile.threadRepliesInChannel }, 'workspace profile updated');
    return '';
  }
}

/**
 * A 9033's tags: `["icon", <http(s) URL | data:image/* URL | "" to clear>]` and
 * `["thread_replies_in_channel", true|false]`. A 9033 with neither clears the icon (upstream's
 * first form of the command carried the icon only).
 */
export function workspaceProfileOf(event: NostrEvent): WorkspaceProfile {
  const icon = tagValue(event, 'icon');
  const thread = tagValue(event, 'thread_replies_in_channel');
  let threadRepliesInChannel: boolean | undefined;
  if (thread !== undefined) {
    const word = thread.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) threadRepliesInChannel = true;
    else if (FALSE_WORDS.has(word)) threadRepliesInChannel = false;
    else reject(RELAY_ADMIN_REFUSALS.threadRepliesWord);
  }
  if (icon === undefined) return threadRepliesInChannel === undefined ? { icon: null } : { threadRepliesInChannel };
  if (icon !== '') checkIcon(icon);
  return { icon: icon === '' ? null : icon, threadRepliesInChannel };
}

function checkIcon(icon: string): void {
  if (/[\s\p{Cc}]/u.test(icon)) reject(RELAY_ADMIN_REFUSALS.iconCharacters);
  const bytes = Buffer.byteLength(icon);
  if (icon.startsWith('data:image/')) {
    if (bytes > ICON_DATA_URL_MAX) reject(RELAY_ADMIN_REFUSALS.iconDataUrlTooLong(bytes, ICON_DATA_URL_MAX));
    return;
  }
  if (!icon.startsWith('https://') && !icon.startsWith('http://')) reject(RELAY_ADMIN_REFUSALS.iconScheme);
  if (bytes > ICON_URL_MAX) reject(RELAY_ADMIN_REFUSALS.iconUrlTooLong(bytes, ICON_URL_MAX));
}
