import { createHash } from 'node:crypto';
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure';
import { NostrEvent } from '../nostr/nostr.types.js';
import { checkNip98Event, decodeNostrAuthorization } from './nip98.js';

const now = Math.floor(Date.now() / 1000);
const body = '[{"kinds":[1]}]';
const base = { url: 'http://localhost:3000/query', method: 'POST', rawBody: body, nowSecs: now };

function nip98(tags: string[][], created_at = now, kind = 27235): NostrEvent {
  return finalizeEvent({ kind, created_at, tags, content: '' }, generateSecretKey()) as NostrEvent;
}

const good = () => nip98([['u', 'http://localhost:3000/query'], ['method', 'post'], ['payload', createHash('sha256').update(body).digest('hex')]]);

describe('NIP-98', () => {
  it('decodes a base64 header into an event', () => {
    const ev = good();
    const decoded = decodeNostrAuthorization(`Nostr ${Buffer.from(JSON.stringify(ev)).toString('base64')}`);
    expect(decoded).toEqual({ ok: true, event: JSON.parse(JSON.stringify(ev)) });
  });

  it.each([
    [undefined, 'missing Nostr auth'],
    ['Bearer abc', 'missing Nostr auth'],
    ['Nostr !!!', 'invalid base64 in Nostr auth'],
    [`Nostr ${Buffer.from([0xff, 0xfe]).toString('base64')}`, 'invalid UTF-8 in Nostr auth'],
    [`Nostr ${Buffer.from('{not json').toString('base64')}`, 'invalid NIP-98 event JSON'],
  ])('rejects header %p with %p', (header, error) => {
    expect(decodeNostrAuthorization(header)).toEqual({ ok: false, error });
  });

  it('accepts a matching event, with loopback spellings and a trailing slash', () => {
    expect(checkNip98Event(good(), base)).toBeUndefined();
    expect(checkNip98Event(good(), { ...base, url: 'http://127.0.0.1:3000/query/' })).toBeUndefined();
  });

  it.each([
    ['kind', nip98([['u', base.url], ['method', 'POST']], now, 1)],
    ['stale', nip98([['u', base.url], ['method', 'POST']], now - 61)],
    ['url', nip98([['u', 'http://localhost:3000/count'], ['method', 'POST']])],
    ['port', nip98([['u', 'http://localhost:3001/query'], ['method', 'POST']])],
    ['method', nip98([['u', base.url], ['method', 'GET']])],
    ['payload', nip98([['u', base.url], ['method', 'POST'], ['payload', '00'.repeat(32)]])],
  ])('rejects a wrong %s', (_n, ev) => {
    expect(checkNip98Event(ev, base)).toMatch(/^NIP-98: /);
  });

  it('requires a payload tag only where the route asks for one', () => {
    const bare = nip98([['u', base.url], ['method', 'POST']]);
    expect(checkNip98Event(bare, base)).toBeUndefined();
    expect(checkNip98Event(bare, { ...base, requirePayload: true })).toBe('NIP-98: missing payload tag');
    expect(checkNip98Event(good(), { ...base, requirePayload: true })).toBeUndefined();
  });
});
