import { ingestStatus } from './ingest-status.js';

const result = (accepted: boolean, message: string) => ({ accepted, message, eventId: 'a'.repeat(64) });

describe('ingestStatus (POST /events)', () => {
  it.each([
    [true, '', 200],
    [true, 'duplicate:', 200],
    [false, 'duplicate: a newer version of this event is already stored', 200],
    [false, 'invalid: bad signature', 400],
    [false, 'invalid: kind 1059 is only accepted via WebSocket', 400],
    [false, 'auth-required: not authenticated', 401],
    [false, 'blocked: you are banned from this community', 403],
    [false, 'restricted: not a channel member', 403],
    [false, 'rate-limited: quota exceeded; retry in 3s', 429],
    [false, 'error: internal server error', 500],
    [false, 'something without a known prefix', 400],
  ])('accepted=%p %p is %p', (accepted, message, status) => {
    expect(ingestStatus(result(accepted, message))).toBe(status);
  });
});
