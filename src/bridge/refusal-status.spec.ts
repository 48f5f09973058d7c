import { Refusal, RefusalCode } from '../nostr/refusal.js';
import { ingestStatus, refusalError, refusalStatus } from './refusal-status.js';

const eventId = 'a'.repeat(64);

describe('refusalStatus (the bridge)', () => {
  it.each<[RefusalCode, number]>([
    ['duplicate', 200],
    ['invalid', 400],
    ['pow', 400],
    ['mute', 400],
    ['auth-required', 401],
    ['blocked', 403],
    ['restricted', 403],
    ['rate-limited', 429],
    ['error', 500],
  ])('%s is %p', (code, status) => {
    expect(refusalStatus(new Refusal(code, 'x'))).toBe(status);
  });

  it('throws the reason text as the body of that status', () => {
    const err = refusalError(new Refusal('blocked', 'you are banned from this community'));
    expect([err.status, err.message]).toEqual([403, 'blocked: you are banned from this community']);
  });
});

describe('ingestStatus (POST /events)', () => {
  it('is 200 for a stored or an already stored event', () => {
    expect(ingestStatus({ accepted: true, message: '', eventId })).toBe(200);
    expect(ingestStatus({ accepted: true, message: 'duplicate:', eventId })).toBe(200);
  });

  it.each<[RefusalCode, string, number]>([
    ['duplicate', 'a newer version of this event is already stored', 200],
    ['invalid', 'kind 1059 is only accepted via WebSocket', 400],
    ['auth-required', 'not authenticated', 401],
    ['restricted', 'not a channel member', 403],
    ['rate-limited', 'quota exceeded; retry in 3s', 429],
    ['error', 'internal server error', 500],
  ])('is the status of a refused event: %s', (code, detail, status) => {
    const refusal = new Refusal(code, detail);
    expect(ingestStatus({ accepted: false, message: refusal.wire, eventId, refusal })).toBe(status);
  });
});
