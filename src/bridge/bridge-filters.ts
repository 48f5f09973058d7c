import { HttpError } from '../common/http-error.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { parseFilter } from '../nostr/filter.js';

export const MAX_BRIDGE_FILTERS = 10;
export const MAX_EXPLICIT_CHANNELS = 128;

/**
 * Parses a bridge body: a JSON array of filter objects. Every problem is a 400
 * with the `invalid filters:` prefix, decided before any read runs.
 */
export function parseBridgeFilters(rawBody: string, allowConsistency: boolean): NostrFilter[] {
  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch (e) {
    throw new HttpError(400, `invalid filters: body is not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(json)) throw new HttpError(400, 'invalid filters: body must be a JSON array of filter objects');
  if (json.length > MAX_BRIDGE_FILTERS) {
    throw new HttpError(400, `invalid filters: request contains ${json.length} filters, maximum is ${MAX_BRIDGE_FILTERS}`);
  }
  const filters = json.map((raw, i) => {
    const parsed = parseFilter(raw);
    if (!parsed.ok) {
      // The two before_id cursor texts are a wire contract and go out bare.
      throw new HttpError(400, parsed.code === 'invalid_cursor' ? parsed.reason : `invalid filters: filter ${i}: ${parsed.reason}`);
    }
    return parsed.filter;
  });
  const channels = filters.reduce((n, f) => n + (f.tags.h?.length ?? 0), 0);
  if (channels > MAX_EXPLICIT_CHANNELS) throw new HttpError(400, 'too many explicit channels');
  if (allowConsistency) {
    for (const f of filters) {
      const c = f.extensions.consistency;
      if (c !== undefined && c !== 'strong') throw new HttpError(400, 'invalid filters: consistency must be "strong"');
    }
  }
  return filters;
}
