/**
 * Event shape parsing, canonical id and the cheap ingest limits (relay.md §5.2 steps 3–4, 13).
 *
 * Every failure reason is an OK-message string starting with `invalid: `.
 */
import { isHex128, isHex64 } from './hex.js';
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

export type ParseEventResult = { ok: true; event: NostrEvent } | { ok: false; reason: string };
export type LimitCheckResult = { ok: true } | { ok: false; reason: string };

type RawEvent = Record<string, unknown>;

/**
 * Strict NIP-01 shape check. Unknown extra fields are dropped: the returned event holds exactly
 * the seven NIP-01 fields.
 */
export function parseEvent(raw: unknown): ParseEventResult {
  if (!isPlainObject(raw)) {
    return fail('event must be a JSON object');
  }
  const reason = firstShapeError(raw);
  if (reason !== null) {
    return fail(reason);
  }
  return { ok: true, event: pickEventFields(raw) };
}

function firstShapeError(raw: RawEvent): string | null {
  if (!isHex64(raw.id)) return 'id must be 64 lowercase hex characters';
  if (!isHex64(raw.pubkey)) return 'pubkey must be 64 lowercase hex characters';
  if (!isHex128(raw.sig)) return 'sig must be 128 lowercase hex characters';
  if (!isNonNegativeSafeInteger(raw.created_at)) return 'created_at must be a non-negative integer';
  if (!isKindNumber(raw.kind)) return `kind must be an integer between 0 and ${MAX_KIND}`;
  if (!isTagArray(raw.tags)) return 'tags must be an array of arrays of strings';
  if (typeof raw.content !== 'string') return 'content must be a string';
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
    return fail('event timestamp too far from server time');
  }
  const contentBytes = Buffer.byteLength(ev.content, 'utf8');
  if (contentBytes > MAX_CONTENT_BYTES) {
    return fail(`content exceeds maximum size of ${MAX_CONTENT_BYTES} bytes (got ${contentBytes})`);
  }
  const tagError = firstTagLimitError(ev.tags);
  if (tagError !== null) {
    return fail(tagError);
  }
  if (isAddressable(ev.kind) && dTagBytes(ev.tags) > D_TAG_MAX_LEN) {
    return fail('d tag too long');
  }
  return { ok: true };
}

function firstTagLimitError(tags: string[][]): string | null {
  if (tags.length > MAX_TAGS) {
    return `too many tags (got ${tags.length}, maximum is ${MAX_TAGS})`;
  }
  for (const tag of tags) {
    if (tag.length > MAX_TAG_ELEMENTS) {
      return `tag has too many elements (got ${tag.length}, maximum is ${MAX_TAG_ELEMENTS})`;
    }
    if (tag.some((el) => Buffer.byteLength(el, 'utf8') > MAX_TAG_ELEMENT_BYTES)) {
      return `tag element exceeds maximum size of ${MAX_TAG_ELEMENT_BYTES} bytes`;
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
  if (inContent !== null) return fail(`content contains ${inContent}, which the relay cannot store`);
  for (let i = 0; i < ev.tags.length; i++) {
    const tag = ev.tags[i];
    for (let j = 0; j < tag.length; j++) {
      const found = unstorableText(tag[j]);
      if (found !== null) return fail(`tags[${i}][${j}] contains ${found}, which the relay cannot store`);
    }
  }
  return { ok: true };
}

/** UTF-8 size of the first `d` tag's value (the addressable key); 0 when absent. */
function dTagBytes(tags: string[][]): number {
  const d = tags.find((t) => t[0] === 'd');
  return d !== undefined && d.length >= 2 ? Buffer.byteLength(d[1], 'utf8') : 0;
}

function fail(detail: string): { ok: false; reason: string } {
  return { ok: false, reason: `invalid: ${detail}` };
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
