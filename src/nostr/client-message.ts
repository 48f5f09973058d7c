/**
 * The WebSocket frame parser (relay.md §2.3): one text frame to a client message, with its
 * filters parsed by `filter.ts`.
 */
import { parseFilter } from './filter.js';
import { NostrFilter } from './nostr.types.js';

export const MAX_FILTERS = 10;
export const MAX_SUB_ID_BYTES = 256;

export type ClientMessage =
  | { type: 'EVENT'; event: Record<string, unknown> }
  | { type: 'AUTH'; event: Record<string, unknown> }
  | { type: 'REQ'; subId: string; filters: NostrFilter[] }
  | { type: 'COUNT'; subId: string; filters: NostrFilter[] }
  | { type: 'CLOSE'; subId: string };

/**
 * `error` is the text that follows `invalid message: ` in the NOTICE. `subId` is set when a REQ or
 * COUNT named a usable sub-id and only its filters were refused: that request is then also
 * answered with `CLOSED` (`invalid: <error>`), so a client waiting on it is not left hanging.
 */
export type InvalidClientMessage = { type: 'INVALID'; error: string; subId?: string };

/** Parse one text frame (§2.3). EVENT/AUTH payloads are only checked to be objects: run `parseEvent`. */
export function parseClientMessage(text: string): ClientMessage | InvalidClientMessage {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch (err) {
    return invalid(`JSON parse error: ${(err as Error).message}`);
  }
  if (!Array.isArray(frame)) return invalid('expected JSON array');
  if (frame.length === 0) return invalid('empty array');
  const [verb] = frame;
  if (typeof verb !== 'string') return invalid('first element must be a string');
  return parseVerb(verb, frame);
}

function parseVerb(verb: string, frame: unknown[]): ClientMessage | InvalidClientMessage {
  switch (verb) {
    case 'EVENT':
    case 'AUTH':
      return isObject(frame[1]) ? { type: verb, event: frame[1] } : invalid(`${verb} requires event object`);
    case 'REQ':
    case 'COUNT':
      return parseSubscription(verb, frame);
    case 'CLOSE':
      if (frame.length < 2) return invalid('CLOSE requires sub_id');
      return typeof frame[1] === 'string' ? { type: 'CLOSE', subId: frame[1] } : invalid('CLOSE sub_id must be a string');
    default:
      return invalid(`unknown message type: ${verb}`);
  }
}

function parseSubscription(verb: 'REQ' | 'COUNT', frame: unknown[]): ClientMessage | InvalidClientMessage {
  const subIdError = checkSubId(verb, frame);
  if (subIdError !== null) return invalid(subIdError);
  const subId = frame[1] as string;
  const rawFilters = frame.slice(2);
  if (rawFilters.length > MAX_FILTERS) {
    return { ...invalid(`${verb} contains ${rawFilters.length} filters, maximum is ${MAX_FILTERS}`), subId };
  }
  const filters: NostrFilter[] = [];
  for (const raw of rawFilters) {
    const parsed = parseFilter(raw);
    if (!parsed.ok) {
      return { ...invalid(parsed.code === 'invalid_cursor' ? parsed.reason : `invalid filter: ${parsed.reason}`), subId };
    }
    filters.push(parsed.filter);
  }
  return { type: verb, subId, filters };
}

function checkSubId(verb: string, frame: unknown[]): string | null {
  if (frame.length < 2) return `${verb} requires sub_id`;
  const subId = frame[1];
  if (typeof subId !== 'string') return `${verb} sub_id must be a string`;
  if (subId.length === 0) return `${verb} sub_id must not be empty`;
  if (Buffer.byteLength(subId, 'utf8') > MAX_SUB_ID_BYTES) {
    return `${verb} sub_id exceeds maximum length of ${MAX_SUB_ID_BYTES} bytes`;
  }
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(error: string): InvalidClientMessage {
  return { type: 'INVALID', error };
}
