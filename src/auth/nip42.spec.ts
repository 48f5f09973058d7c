import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure';
import { NostrEvent } from '../nostr/nostr.types.js';
import { authEventProblem, checkAuthEvent, relayTagMatches } from './nip42.js';

const now = Math.floor(Date.now() / 1000);
const expect0 = { challenge: 'abc', tenantHost: 'localhost:3000', scheme: 'ws:' as const, nowSecs: now };

function authEvent(overrides: { kind?: number; created_at?: number; tags?: string[][] } = {}): NostrEvent {
  return finalizeEvent(
    {
      kind: overrides.kind ?? 22242,
      created_at: overrides.created_at ?? now,
      tags: overrides.tags ?? [
        ['relay', 'ws://localhost:3000/'],
        ['challenge', 'abc'],
      ],
      content: '',
    },
    generateSecretKey(),
  ) as NostrEvent;
}

describe('NIP-42 AUTH checks', () => {
  it('accepts a well-formed auth event for the tenant host', () => {
    expect(checkAuthEvent(authEvent(), expect0)).toBe(true);
  });

  it.each([
    ['a wrong kind', authEvent({ kind: 1 }), 'kind must be 22242'],
    ['a stale timestamp', authEvent({ created_at: now - 61 }), "created_at is more than 60 s from the relay's clock"],
    ['a future timestamp', authEvent({ created_at: now + 61 }), "created_at is more than 60 s from the relay's clock"],
    ['a wrong challenge', authEvent({ tags: [['relay', 'ws://localhost:3000'], ['challenge', 'zzz']] }), "challenge tag does not match this connection's challenge"],
    ['no challenge', authEvent({ tags: [['relay', 'ws://localhost:3000']] }), 'no challenge tag'],
    ['a missing relay tag', authEvent({ tags: [['challenge', 'abc']] }), 'no relay tag'],
    ['another tenant host', authEvent({ tags: [['relay', 'ws://evil.example:3000'], ['challenge', 'abc']] }), 'relay tag must name this relay (ws://localhost:3000/)'],
  ])('rejects %s, saying what is wrong', (_name, ev, problem) => {
    expect(checkAuthEvent(ev, expect0)).toBe(false);
    expect(authEventProblem(ev, expect0)).toBe(problem);
  });

  it('treats loopback spellings as one host but keeps the port and scheme strict', () => {
    expect(relayTagMatches('ws://127.0.0.1:3000', expect0)).toBe(true);
    expect(relayTagMatches('ws://[::1]:3000/', expect0)).toBe(true);
    expect(relayTagMatches('ws://127.0.0.1:3001', expect0)).toBe(false);
    expect(relayTagMatches('wss://localhost:3000', expect0)).toBe(false);
    expect(relayTagMatches('ws://localhost:3000/other', expect0)).toBe(false);
    expect(relayTagMatches('not a url', expect0)).toBe(false);
  });
});
