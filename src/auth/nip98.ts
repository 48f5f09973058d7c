/**
 * NIP-98 HTTP auth checks that need no database or signature work: the header
 * shape, kind, clock window, URL, method and payload hash. Each failure carries
 * the spec's 401 message.
 */
import { createHash } from 'node:crypto';
import { NostrEvent } from '../nostr/nostr.types.js';
import { parseEvent } from '../nostr/event-validation.js';
import { isLoopbackHost } from '../common/host.js';

export const NIP98_KIND = 27235;
export const NIP98_CLOCK_WINDOW_SECS = 60;

export type Nip98Parse = { ok: true; event: NostrEvent } | { ok: false; error: string };

/** Decodes `Authorization: Nostr <base64(JSON event)>`. */
export function decodeNostrAuthorization(header: string | undefined): Nip98Parse {
  const m = /^Nostr\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return { ok: false, error: 'missing Nostr auth' };
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(m[1])) return { ok: false, error: 'invalid base64 in Nostr auth' };
  const bytes = Buffer.from(m[1], 'base64');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, error: 'invalid UTF-8 in Nostr auth' };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, error: 'invalid NIP-98 event JSON' };
  }
  const parsed = parseEvent(json);
  return parsed.ok ? { ok: true, event: parsed.event } : { ok: false, error: 'invalid NIP-98 event JSON' };
}

export interface Nip98Expectation {
  /** `<scheme>://<tenant-host><path>` of this request. */
  readonly url: string;
  /** The request's query string (`?…`, or empty): a `u` may carry it, as NIP-98 says, or leave it out. */
  readonly query?: string;
  readonly method: string;
  readonly rawBody: string;
  readonly nowSecs: number;
  /** The route binds the auth to its body: a `payload` tag must be present (relay.md §3.1 step 3). */
  readonly requirePayload?: boolean;
}

/** Returns the `NIP-98: <detail>` message of the first failed check, or undefined. */
export function checkNip98Event(ev: NostrEvent, expect: Nip98Expectation): string | undefined {
  if (ev.kind !== NIP98_KIND) return `NIP-98: wrong kind ${ev.kind}`;
  if (Math.abs(ev.created_at - expect.nowSecs) > NIP98_CLOCK_WINDOW_SECS) return 'NIP-98: timestamp outside the allowed window';
  const u = ev.tags.find((t) => t[0] === 'u')?.[1];
  if (!u || !(sameUrl(u, expect.url) || (expect.query ? sameUrl(u, expect.url + expect.query) : false))) return 'NIP-98: u tag does not match the request URL';
  const method = ev.tags.find((t) => t[0] === 'method')?.[1];
  if (!method || method.toUpperCase() !== expect.method.toUpperCase()) return 'NIP-98: method tag does not match';
  const payload = ev.tags.find((t) => t[0] === 'payload')?.[1];
  if (payload === undefined && expect.requirePayload) return 'NIP-98: missing payload tag';
  if (payload !== undefined && payload.toLowerCase() !== createHash('sha256').update(expect.rawBody).digest('hex')) {
    return 'NIP-98: payload hash does not match the body';
  }
  return undefined;
}

/** Lowercased scheme and host, trailing slash stripped, loopback spellings equal. */
function sameUrl(a: string, b: string): boolean {
  const norm = (s: string): string | undefined => {
    try {
      const url = new URL(s);
      const host = isLoopbackHost(url.hostname) ? 'loopback' : url.hostname.toLowerCase();
      const path = url.pathname.replace(/\/+$/, '');
      return `${url.protocol}//${host}:${url.port}${path}${url.search}`;
    } catch {
      return undefined;
    }
  };
  const na = norm(a);
  return na !== undefined && na === norm(b);
}
