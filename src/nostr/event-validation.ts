/**
 * Event shape parsing, canonical id and the cheap ingest limits (relay.md §5.2 steps 3–4, 13).
 *
 * Every failure is an `invalid` refusal of EVENT_REFUSALS.
 */
import { EVENT_REFUSALS } from './event.refusals.js';
import { isHex128, isHex64 } from './hex.js';
import { Refusal } from './refusal.js';
import { NostrEvent } from './nostr.types.js';
import { unstorableText } from './storable-text.js';
import { isAddressable } from './kinds.js';

/** `|created_at − now|` bound, seconds (§7 "Event created_at window"). */
export const MAX_CREATED_AT_DRIFT_SECS = 900;
/** Content cap, UTF-8 bytes (§7 "Event content cap"). */
export const MAX_CONTENT_BYTES = 262_144;
/** Addressable `d` value cap, UTF-8 bytes (§5.2 step 13, design choice). */
export const D_TAG_MAX_LEN = 1024;
/**
 * Tag caps (design choice for this project; the spec sets none). 2,000 tags matches strfry's
 * default and leaves room for large contact lists; 100 elements covers `imeta`-style tags with
 * room to spare; 64 KiB per element is generous while the 512 KiB frame cap bounds the total.
 */
export const MAX_TAGS = 2000;
export const MAX_TAG_ELEMENTS = 100;
export const MAX_TAG_ELEMENT_BYTES = 65_536;

const MAX_KIND = 65_535;

export type ParseEventResult = { ok: true; event: NostrEvent } | { ok: false; reason: Refusal };
export type LimitCheckResult = { ok: true } | { ok: false; reason: Refusal };

type RawEvent = Record<string, unknown>;

/**
 * Strict NIP-01 shape check. Unknown extra fields are dropped: the returned event holds exactly
 * the seven NIP-01 fields.
 */
export function parseEvent(raw: unknown): ParseEventResult {
  if (!isPlainObject(raw)) {
    return fail(EVENT_REFUSALS.notAnObject);
  }
  const reason = firstShapeError(raw);
  if (reason !== null) {
    return fail(reason);
  }
  return { ok: true, event: pickEventFields(raw) };
}

function firstShapeError(raw: RawEvent): Refusal | null {
  if (!isHex64(raw.id)) return EVENT_REFUSALS.id;
  if (!isHex64(raw.pubkey)) return EVENT_REFUSALS.pubkey;
  if (!isHex128(raw.sig)) return EVENT_REFUSALS.sig;
  if (!isNonNegativeSafeInteger(raw.created_at)) return EVENT_REFUSALS.createdAt;
  if (!isKindNumber(raw.kind)) return EVENT_REFUSALS.kind(MAX_KIND);
  if (!isTagArray(raw.tags)) return EVENT_REFUSALS.tags;
  if (typeof raw.content !== 'string') return EVENT_REFUSALS.content;
  return null;
}

function pickEventFields(raw: RawEvent): NostrEvent {
  return {
    id: raw.id as string,
    pubkey: raw.pubkey as string,
    created_at: raw.created_at as number,
    kind: raw.kind as number,
    tags: raw.tags as string[][],
    content: raw.content as string,
    sig: raw.sig as string,
  };
}

/** §5.2 steps 3–4 plus the tag caps and the addressable `d` cap, in that order. */
export function checkEventLimits(ev: NostrEvent, nowSecs: number): LimitCheckResult {
  if (Math.abs(ev.created_at - nowSecs) > MAX_CREATED_AT_DRIFT_SECS) {
    return fail(EVENT_REFUSALS.timestampDrift);
  }
  const contentBytes = Buffer.byteLength(ev.content, 'utf8');
  if (contentBytes > MAX_CONTENT_BYTES) {
    return fail(EVENT_REFUSALS.contentTooLarge(MAX_CONTENT_BYTES, contentBytes));
  }
  const tagError = firstTagLimitError(ev.tags);
  if (tagError !== null) {
    return fail(tagError);
  }
  if (isAddressable(ev.kind) && dTagBytes(ev.tags) > D_TAG_MAX_LEN) {
    return fail(EVENT_REFUSALS.dTagTooLong);
  }
  return { ok: true };
}

function firstTagLimitError(tags: string[][]): Refusal | null {
  if (tags.length > MAX_TAGS) {
    return EVENT_REFUSALS.tooManyTags(tags.length, MAX_TAGS);
  }
  for (const tag of tags) {
    if (tag.length > MAX_TAG_ELEMENTS) {
      return EVENT_REFUSALS.tagTooWide(tag.length, MAX_TAG_ELEMENTS);
    }
    if (tag.some((el) => Buffer.byteLength(el, 'utf8') > MAX_TAG_ELEMENT_BYTES)) {
      return EVENT_REFUSALS.tagElementTooLarge(MAX_TAG_ELEMENT_BYTES);
    }
  }
  return null;
}

/**
 * Content and every tag element must be text the relay stores and gives back unchanged (see
 * `nostr/storable-text.ts`): a NUL or an unpaired surrogate would be refused by Postgres after
 * the checks, or stored altered and fail verification on read-back. The id, pubkey and sig are
 * hex by {@link parseEvent}, so these are the only free-text fields.
 */
export function checkStorableText(ev: NostrEvent): LimitCheckResult {
  const inContent = unstorableText(ev.content);
  if (inContent !== null) return fail(EVENT_REFUSALS.unstorableContent(inContent));
  for (let i = 0; i < ev.tags.length; i++) {
    const tag = ev.tags[i];
    for (let j = 0; j < tag.length; j++) {
      const found = unstorableText(tag[j]);
      if (found !== null) return fail(EVENT_REFUSALS.unstorableTag(i, j, found));
    }
  }
  return { ok: true };
}

/** UTF-8 size of the first `d` tag's value (the addressable key); 0 when absent. */
function dTagBytes(tags: string[][]): number {
  const d = tags.find((t) => t[0] === 'd');
  return d !== undefined && d.length >= 2 ? Buffer.byteLength(d[1], 'utf8') : 0;
}

function fail(reason: Refusal): { ok: false; reason: Refusal } {
  return { ok: false, reason };
}

function isPlainObject(value: unknown): value is RawEvent {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonNegativeSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isKindNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_KIND;
}

function isTagArray(value: unknown): value is string[][] {
  return (
    Array.isArray(value) &&
    value.every((tag) => Array.isArray(tag) && tag.every((el) => typeof el === 'string'))
  );
}
