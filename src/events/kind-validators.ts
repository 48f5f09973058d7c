/**
 * Per-kind validators (relay.md §1.3, §5.2 step 12). Pure checks: `kindShapeError` needs the
 * event alone; `kindTargetError` also needs the event the edit or vote references, which the
 * caller looks up (on the writer) using `kindTargetOf`. Each returns a refusal or undefined.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { lastHexTag } from './event-derivation.js';
import { KIND } from '../nostr/kinds.js';
import { Refusal } from '../nostr/refusal.js';
import { INGEST_REFUSALS, TARGET_NOT_FOUND } from './ingest.refusals.js';

/** Diff content cap, UTF-8 bytes: the spec's "≤60 KB" read as 60 KiB. */
export const MAX_DIFF_CONTENT_BYTES = 60 * 1024;

const COMMIT = /^[0-9a-f]{7,}$/i;
const FORUM_VOTE_TARGET_KINDS: ReadonlySet<number> = new Set([KIND.FORUM_POST, KIND.FORUM_COMMENT]);

/** What the validators need to know about the event an edit or a vote references. */
export interface KindTarget {
  readonly pubkey: string;
  readonly kind: number;
  readonly channelId: string | null;
  /** The owner recorded for the target's author (agent_owners), if any. */
  readonly authorOwner: string | null;
}

/** Checks that need no lookup: the profile JSON, the diff envelope, the edit and vote references. */
export function kindShapeError(event: NostrEvent): Refusal | undefined {
  switch (event.kind) {
    case KIND.PROFILE:
      return isJsonObject(event.content) ? undefined : INGEST_REFUSALS.profileNotJsonObject;
    case KIND.STREAM_MESSAGE_DIFF:
      return diffError(event);
    case KIND.STREAM_MESSAGE_EDIT:
      return kindTargetOf(event) ? undefined : INGEST_REFUSALS.editWithoutTarget;
    case KIND.FORUM_VOTE:
      return kindTargetOf(event) ? undefined : INGEST_REFUSALS.voteWithoutTarget;
    default:
      return undefined;
  }
}

/** The event an edit or a vote references (its last 64-hex `e` tag, as for reactions); undefined for other kinds. */
export function kindTargetOf(event: NostrEvent): string | undefined {
  if (event.kind !== KIND.STREAM_MESSAGE_EDIT && event.kind !== KIND.FORUM_VOTE) return undefined;
  return lastHexTag(event, 'e');
}

/**
 * An edit's target must be a live message in the edit's channel, written by the editor or by an
 * agent whose recorded owner is the editor. A vote's target must be a forum post or comment in
 * the vote's channel. `target` is undefined when no live event of this community has the id, or
 * when the author may not read it (TargetVisibility): both get the same answer.
 */
export function kindTargetError(event: NostrEvent, channelId: string | null, target: KindTarget | undefined): Refusal | undefined {
  if (event.kind === KIND.STREAM_MESSAGE_EDIT) {
    if (!target) return TARGET_NOT_FOUND.edit;
    if (target.channelId !== channelId) return INGEST_REFUSALS.editInOtherChannel;
    if (target.pubkey !== event.pubkey && target.authorOwner !== event.pubkey) {
      return INGEST_REFUSALS.editByOther;
    }
    return undefined;
  }
  if (event.kind === KIND.FORUM_VOTE) {
    if (!target || !FORUM_VOTE_TARGET_KINDS.has(target.kind) || target.channelId !== channelId) {
      return INGEST_REFUSALS.voteTarget;
    }
  }
  return undefined;
}

function diffError(event: NostrEvent): Refusal | undefined {
  const bytes = Buffer.byteLength(event.content, 'utf8');
  if (bytes > MAX_DIFF_CONTENT_BYTES) return INGEST_REFUSALS.diffTooLarge(MAX_DIFF_CONTENT_BYTES, bytes);
  const repo = event.tags.find((t) => t[0] === 'repo')?.[1];
  if (!repo || !isHttpUrl(repo)) return INGEST_REFUSALS.diffRepo;
  const commit = event.tags.find((t) => t[0] === 'commit')?.[1];
  if (!commit || !COMMIT.test(commit)) return INGEST_REFUSALS.diffCommit;
  return undefined;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
