import { parseClientMessage } from '../nostr/client-message.js';
import { MemoryPool } from '../memory/memory-budget.js';
import { AuthHold, HeldMessage } from './auth-hold.js';

/** A frame as the gateway sees it: the text and its parse. */
function frame(...parts: unknown[]): [HeldMessage, string] {
  const text = JSON.stringify(parts);
  return [parseClientMessage(text) as HeldMessage, text];
}
const req = (subId: string) => frame('REQ', subId, { kinds: [9] });
const offer = (hold: AuthHold, [msg, text]: [HeldMessage, string], bytes = text.length) => hold.offer(msg, text, bytes);

describe('AuthHold', () => {
  it('keeps arrival order and gives the frames back parsed, empty afterwards', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 1000, graceMs: 1000 });
    const frames = [req('a'), frame('EVENT', { id: 'x' }), frame('CLOSE', 'a'), req('b')];
    for (const f of frames) expect(offer(hold, f, 10)).toBe('held');
    expect(hold.drain()).toEqual(frames.map(([msg]) => msg));
    expect(hold.size).toBe(0);
    expect(hold.heldBytes).toBe(0);
  });

  it('refuses a frame past the count bound', () => {
    const hold = new AuthHold({ maxFrames: 2, maxBytes: 1000, graceMs: 1000 });
    expect([offer(hold, req('a'), 1), offer(hold, req('b'), 1), offer(hold, req('c'), 1)]).toEqual(['held', 'held', 'full']);
    expect(hold.size).toBe(2);
  });

  it('refuses a frame past the byte bound but still holds smaller ones', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 100, graceMs: 1000 });
    expect(offer(hold, req('a'), 60)).toBe('held');
    expect(offer(hold, req('b'), 50)).toBe('full');
    expect(offer(hold, req('c'), 40)).toBe('held');
    expect(hold.heldBytes).toBe(100);
  });

  it('holds nothing when its bounds are zero', () => {
    expect(offer(new AuthHold({ maxFrames: 0, maxBytes: 1000, graceMs: 1000 }), req('a'), 1)).toBe('full');
    expect(offer(new AuthHold({ maxFrames: 5, maxBytes: 0, graceMs: 1000 }), req('a'), 1)).toBe('full');
  });

  it('drops held REQs superseded by a later frame for the same id', () => {
    const hold = new AuthHold({ maxFrames: 10, maxBytes: 1000, graceMs: 1000 });
    offer(hold, req('a'), 1);
    offer(hold, frame('COUNT', 'a', { kinds: [9] }), 1);
    offer(hold, req('b'), 1);
    hold.supersede('a');
    expect(hold.drain().map((m) => `${m.type}:${(m as { subId: string }).subId}`)).toEqual(['COUNT:a', 'REQ:b']);
  });

  it('draws held bytes from the process pool: connections within their own bounds stop at its total', () => {
    const pool = new MemoryPool('auth_hold', 250, 100);
    const a = new AuthHold({ maxFrames: 10, maxBytes: 200, graceMs: 1000 }, pool);
    const b = new AuthHold({ maxFrames: 10, maxBytes: 200, graceMs: 1000 }, pool);
    expect(offer(a, req('1'), 100)).toBe('held');
    expect(offer(a, req('2'), 100)).toBe('held');
    expect(offer(b, req('3'), 100)).toBe('memory');
    expect(offer(b, req('4'), 50)).toBe('held');
    expect(pool.inUse).toBe(250);
    a.supersede('1');
    expect(pool.inUse).toBe(150);
    a.drain();
    b.clear();
    expect(pool.inUse).toBe(0);
  });
});
