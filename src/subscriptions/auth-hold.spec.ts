import { NostrFilter } from '../common/nostr.types.js';
import { AuthHold, HeldMessage } from './auth-hold.js';

const filters: NostrFilter[] = [{ tags: {}, extensions: {} }];
const req = (subId: string): HeldMessage => ({ type: 'REQ', subId, filters });

describe('AuthHold', () => {
  it('keeps arrival order and empties on drain', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 1000, graceMs: 1000 });
    const frames: HeldMessage[] = [req('a'), { type: 'EVENT', event: {} }, { type: 'CLOSE', subId: 'a' }, req('b')];
    for (const f of frames) expect(hold.offer(f, 10)).toBe(true);
    expect(hold.drain()).toEqual(frames);
    expect(hold.size).toBe(0);
    expect(hold.heldBytes).toBe(0);
  });

  it('refuses a frame past the count bound', () => {
    const hold = new AuthHold({ maxFrames: 2, maxBytes: 1000, graceMs: 1000 });
    expect([hold.offer(req('a'), 1), hold.offer(req('b'), 1), hold.offer(req('c'), 1)]).toEqual([true, true, false]);
    expect(hold.size).toBe(2);
  });

  it('refuses a frame past the byte bound but still holds smaller ones', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 100, graceMs: 1000 });
    expect(hold.offer(req('a'), 60)).toBe(true);
    expect(hold.offer(req('b'), 50)).toBe(false);
    expect(hold.offer(req('c'), 40)).toBe(true);
    expect(hold.heldBytes).toBe(100);
  });

  it('holds nothing when its bounds are zero', () => {
    expect(new AuthHold({ maxFrames: 0, maxBytes: 1000, graceMs: 1000 }).offer(req('a'), 1)).toBe(false);
    expect(new AuthHold({ maxFrames: 5, maxBytes: 0, graceMs: 1000 }).offer(req('a'), 1)).toBe(false);
  });

  it('drops held REQs superseded by a later frame for the same id', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 1000, graceMs: 1000 });
    hold.offer(req('a'), 1);
    hold.offer({ type: 'COUNT', subId: 'a', filters }, 1);
    hold.offer(req('b'), 1);
    hold.supersede('a');
    expect(hold.drain().map((m) => `${m.type}:${(m as { subId: string }).subId}`)).toEqual(['COUNT:a', 'REQ:b']);
  });
});
