import { WebSocket } from 'ws';
import { communityWide } from '../channels/read-scope.js';
import { StoredEvent } from '../events/stored-event.js';
import { eventFrame, FRAMES_PER_TURN, pageTarget, sendPageTurn } from './history-page.js';
import { RelayConnection } from './relay-connection.js';

const log = { debug: () => undefined } as never;
const quiet = { slowClientDisconnected: () => undefined, subscriptionShed: () => undefined };
const hex = (n: number, len: number) => n.toString(16).padStart(len, '0');

function row(n: number, kind = 1): StoredEvent {
  return new StoredEvent({ id: hex(n, 64), pubkey: hex(7, 64), created_at: String(1_700_000_000 + n), kind, tags: '[["t", "x"]]', content: `note "${n}" ✓`, sig: hex(n, 128) });
}

/** An authenticated connection on a stand-in socket that records what was sent, as text. */
function connection(): { conn: RelayConnection; sent: string[] } {
  const sent: string[] = [];
  const ws = {
    readyState: WebSocket.OPEN as number,
    send: (data: string | Buffer, opts: unknown, cb?: () => void) => {
      sent.push(data.toString());
      (typeof opts === 'function' ? (opts as () => void) : cb!)();
    },
    close() {},
    terminate() {},
  };
  const conn = new RelayConnection(ws as unknown as WebSocket, 'c1', 'localhost', log, { sendBuffer: 10_000, slowClientGraceLimit: 3, maxQueuedBytes: 1 << 24 }, quiet);
  conn.pubkey = hex(9, 64);
  conn.authState = 'authenticated';
  return { conn, sent };
}

describe('eventFrame', () => {
  it('is the EVENT frame of the row, the same bytes for subscribers with the same id', () => {
    const ev = row(1);
    const a = eventFrame(ev, '["EVENT","sub",');
    expect(JSON.parse(a.toString())).toEqual(['EVENT', 'sub', ev.toJSON()]);
    expect(eventFrame(ev, '["EVENT","sub",')).toBe(a);
  });

  it('builds its own frame for another subscription id', () => {
    const ev = row(2);
    const a = eventFrame(ev, '["EVENT","a",');
    const b = eventFrame(ev, '["EVENT","b",');
    expect(JSON.parse(b.toString())).toEqual(['EVENT', 'b', ev.toJSON()]);
    expect(JSON.parse(a.toString())).toEqual(['EVENT', 'a', ev.toJSON()]);
  });
});

describe('sendPageTurn', () => {
  it('sends a shared page to each subscription under its own id, each followed by its own EOSE', () => {
    const page = [row(10), row(11), row(12)];
    const clients = [connection(), connection(), connection()];
    const ids = ['h', 'h', 'other'];
    clients.forEach((c, i) => {
      const token = c.conn.claim(ids[i], [], communityWide('c1'))!;
      expect(sendPageTurn(pageTarget(c.conn, ids[i], token), page, 0, true)).toEqual({ next: 3, eose: true });
    });
    expect(clients[0].sent).toEqual(clients[1].sent);
    for (const [i, c] of clients.entries()) {
      expect(c.sent.map((f) => JSON.parse(f))).toEqual([...page.map((ev) => ['EVENT', ids[i], ev.toJSON()]), ['EOSE', ids[i]]]);
    }
  });

  it('a page longer than one turn stops after FRAMES_PER_TURN and sends EOSE only after its last row', () => {
    const page = Array.from({ length: FRAMES_PER_TURN + 5 }, (_, i) => row(100 + i));
    const { conn, sent } = connection();
    const target = pageTarget(conn, 's', conn.claim('s', [], communityWide('c1'))!);
    expect(sendPageTurn(target, page, 0, true)).toEqual({ next: FRAMES_PER_TURN });
    expect(sent.some((f) => f.startsWith('["EOSE"'))).toBe(false);
    expect(sendPageTurn(target, page, FRAMES_PER_TURN, true)).toEqual({ next: page.length, eose: true });
    expect(sent.map((f) => JSON.parse(f)[2]?.id ?? 'EOSE')).toEqual([...page.map((ev) => ev.id), 'EOSE']);
  });

  it('without `last` sends no EOSE, and an empty last batch still ends with it', () => {
    const { conn, sent } = connection();
    const target = pageTarget(conn, 's', conn.claim('s', [], communityWide('c1'))!);
    expect(sendPageTurn(target, [row(1)], 0, false)).toEqual({ next: 1 });
    expect(sendPageTurn(target, [], 0, true)).toEqual({ next: 0, eose: true });
    expect(sent.map((f) => JSON.parse(f)[0])).toEqual(['EVENT', 'EOSE']);
  });

  it('skips rows the reader may not see (a gift wrap for someone else)', () => {
    const { conn, sent } = connection();
    const target = pageTarget(conn, 's', conn.claim('s', [], communityWide('c1'))!);
    sendPageTurn(target, [row(1), row(2, 1059), row(3)], 0, true);
    expect(sent.map((f) => JSON.parse(f)[2]?.id ?? 'EOSE')).toEqual([row(1).id, row(3).id, 'EOSE']);
  });

  it('stops, sending nothing more, once the subscription was replaced', () => {
    const { conn, sent } = connection();
    const target = pageTarget(conn, 's', conn.claim('s', [], communityWide('c1'))!);
    conn.claim('s', [], communityWide('c1'));
    expect(sendPageTurn(target, [row(1), row(2)], 0, true)).toEqual({ next: 0, stop: 'gone' });
    expect(sent).toEqual([]);
  });
});
