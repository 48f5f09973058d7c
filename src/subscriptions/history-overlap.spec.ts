import { jest } from '@jest/globals';
import { WebSocket } from 'ws';
import { EventBus } from '../events/event-bus.js';
import { communityWide } from '../channels/read-scope.js';
import { StoredEvent } from '../events/stored-event.js';
import { NostrFilter } from '../nostr/nostr.types.js';
import { HistoryOverlap } from './history-overlap.js';
import { pageTarget, sendPageEose, sendPageTurn } from './history-page.js';
import { LiveFanout } from './live-fanout.service.js';
import { OutputTurns } from './output-turns.js';
import { RelayConnection } from './relay-connection.js';

const log = { debug: () => undefined } as never;
const quiet = { slowClientDisconnected: () => undefined, subscriptionShed: () => undefined };
const hex = (n: number, len: number) => n.toString(16).padStart(len, '0');

function row(n: number): StoredEvent {
  return new StoredEvent({ id: hex(n, 64), pubkey: hex(7, 64), created_at: String(1_700_000_000 + n), kind: 1, tags: '[]', content: `note ${n}`, sig: hex(n, 128) });
}

/**
 * An authenticated connection on a stand-in socket that records what was sent. With
 * `maxQueuedBytes`, writes complete only on `drain()`, so the budget fills up.
 */
function connection(maxQueuedBytes?: number): { conn: RelayConnection; sent: string[]; drain: () => void } {
  const sent: string[] = [];
  let pending: Array<() => void> = [];
  const ws = {
    readyState: WebSocket.OPEN as number,
    send: (data: string | Buffer, opts: unknown, cb?: () => void) => {
      sent.push(data.toString());
      const done = typeof opts === 'function' ? (opts as () => void) : cb!;
      if (maxQueuedBytes === undefined) done();
      else pending.push(done);
    },
    close() {},
    terminate() {},
  };
  const limits = { sendBuffer: 10_000, slowClientGraceLimit: 3, maxQueuedBytes: maxQueuedBytes ?? 1 << 24 };
  const conn = new RelayConnection(ws as unknown as WebSocket, 'c1', 'localhost', log, limits, quiet);
  conn.pubkey = hex(9, 64);
  conn.authState = 'authenticated';
  const drain = () => {
    const done = pending;
    pending = [];
    for (const f of done) f();
  };
  return { conn, sent, drain };
}

/**
 * The real LiveFanout on a real EventBus. Channel-less events need none of its collaborators but
 * the metrics and OutputTurns, so the rest are inert stand-ins.
 */
function fanout(): { bus: EventBus; live: LiveFanout } {
  const bus = new EventBus();
  const metrics = { fanoutRecipients: { observe: () => undefined } };
  const live = new LiveFanout(bus, {} as never, metrics as never, { enabled: false } as never, {} as never, { draining: false } as never, new OutputTurns());
  return { bus, live };
}

const idsOf = (sent: string[]) => sent.map((f) => JSON.parse(f) as unknown[]).map((f) => (f[0] === 'EVENT' ? (f[2] as { id: string }).id : String(f[0])));
const settle = () => new Promise((r) => setImmediate(r));

describe('one subscription, history page and live delivery overlapping', () => {
  const filter: NostrFilter = { kinds: [1], tags: {}, extensions: {} };

  /** A live subscription `s` on a fan-out, and the target of its history page. */
  function reading() {
    const { bus, live } = fanout();
    const { conn, sent } = connection();
    live.add(conn);
    const token = conn.claim('s', [filter], communityWide('c1'))!;
    return { bus, conn, sent, target: pageTarget(conn, 's', token) };
  }

  it('an event published live during the read is not sent again by the page', async () => {
    const { bus, conn, sent, target } = reading();
    const ev = row(1);
    bus.publish({ communityId: 'c1', event: ev, channelId: null });
    await conn.fanoutChain;
    await settle();
    expect(sendPageTurn(target, [row(2), ev], 0, true)).toEqual({ next: 2, eose: true });
    expect(idsOf(sent)).toEqual([ev.id, row(2).id, 'EOSE']);
  });

  it('an event published during the read whose live copy is still queued is sent by the page, before EOSE, once', async () => {
    const { bus, conn, sent, target } = reading();
    const ev = row(1);
    // Published while the page is read; its live frame waits for its output turn.
    bus.publish({ communityId: 'c1', event: ev, channelId: null });
    expect(sendPageTurn(target, [ev, row(2)], 0, true)).toEqual({ next: 2, eose: true });
    await conn.fanoutChain;
    await settle();
    // Both page rows before EOSE, as many as the history holds, and no second copy after it.
    expect(idsOf(sent)).toEqual([ev.id, row(2).id, 'EOSE']);
  });

  it('an event the page already sent gets no live copy, during the read or just after EOSE', async () => {
    const { bus, conn, sent, target } = reading();
    const [a, b, fresh] = [row(1), row(2), row(3)];
    expect(sendPageTurn(target, [a], 0, false)).toEqual({ next: 1 });
    bus.publish({ communityId: 'c1', event: a, channelId: null });
    expect(sendPageTurn(target, [b], 0, true)).toEqual({ next: 1, eose: true });
    // A copy relayed late (another pod's event over Redis) after the page had it.
    bus.publish({ communityId: 'c1', event: b, channelId: null });
    bus.publish({ communityId: 'c1', event: fresh, channelId: null });
    await conn.fanoutChain;
    await settle();
    expect(idsOf(sent)).toEqual([a.id, b.id, 'EOSE', fresh.id]);
  });

  it('a page row that has to wait for room is still sent when the turn resumes (nothing is lost)', () => {
    const { conn, sent, drain } = connection(300);
    const token = conn.claim('s', [filter], communityWide('c1'))!;
    const target = pageTarget(conn, 's', token);
    const rows = [row(1), row(2)];
    const first = sendPageTurn(target, rows, 0, true);
    expect(first).toEqual({ next: 1, waitBytes: expect.any(Number) });
    drain();
    expect(sendPageTurn(target, rows, first.next, true)).toEqual({ next: 2, eose: true });
    expect(idsOf(sent)).toEqual([row(1).id, row(2).id, 'EOSE']);
  });

  it('a subscription that replaced one with the same id starts with nothing recorded', () => {
    const { conn, sent } = connection();
    const first = conn.claim('s', [filter], communityWide('c1'))!;
    sendPageTurn(pageTarget(conn, 's', first), [row(1)], 0, true);
    const second = conn.claim('s', [filter], communityWide('c1'))!;
    sendPageTurn(pageTarget(conn, 's', second), [row(1)], 0, true);
    expect(idsOf(sent)).toEqual([row(1).id, 'EOSE', row(1).id, 'EOSE']);
  });

  it('a one-shot search subscription records nothing', () => {
    const { conn } = connection();
    conn.claim('s', [filter], communityWide('c1'), false);
    expect(conn.subscriptions.get('s')!.overlap).toBeUndefined();
  });

  it('sendPageEose ends the overlap: later live events are sent and not recorded', () => {
    const { conn } = connection();
    const token = conn.claim('s', [filter], communityWide('c1'))!;
    const target = pageTarget(conn, 's', token);
    expect(sendPageEose(target)).toBe('sent');
    const overlap = target.overlap!;
    expect(overlap.liveMay('x')).toBeDefined();
    expect(overlap.liveMay('x')).toBeDefined();
  });
});

describe('HistoryOverlap', () => {
  afterEach(() => jest.useRealTimers());

  it('whichever path sends an id first sends it; the other does not', () => {
    const o = new HistoryOverlap();
    const claim = o.liveMay('a')!;
    claim.sent = true;
    expect(o.pageMay('a')).toBe(false);
    expect(o.pageMay('b')).toBe(true);
    o.pageSent('b');
    expect(o.liveMay('b')).toBeUndefined();
  });

  it('a live copy decided but not yet sent is taken over by the page', () => {
    const o = new HistoryOverlap();
    const claim = o.liveMay('a')!;
    expect(o.pageMay('a')).toBe(true);
    expect(claim.takenByPage).toBe(true);
    o.pageSent('a');
    expect(o.liveMay('a')).toBeUndefined();
  });

  it('keeps the page ids for the linger after EOSE, then forgets them', () => {
    jest.useFakeTimers();
    const o = new HistoryOverlap(10, 1000);
    o.pageSent('a');
    o.end();
    expect(o.liveMay('a')).toBeUndefined();
    expect(o.liveMay('new')).toBeDefined();
    expect(o.liveMay('new')).toBeDefined(); // nothing recorded after EOSE
    jest.advanceTimersByTime(1000);
    expect(o.liveMay('a')).toBeDefined();
  });

  it('records at most maxIds ids: past the bound it never withholds', () => {
    const o = new HistoryOverlap(2, 1000);
    o.pageSent('a');
    o.pageSent('b');
    o.pageSent('c');
    expect(o.liveMay('a')).toBeUndefined();
    expect(o.liveMay('c')).toBeDefined();
    expect(o.pageMay('d')).toBe(true);
  });
});
