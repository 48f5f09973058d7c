import { WebSocket } from 'ws';
import { NostrFilter } from '../common/nostr.types.js';
import { communityWide } from '../events/read-scope.js';
import { RelayConnection } from './relay-connection.js';

function connection(): { conn: RelayConnection; sent: string[]; slow: number[] } {
  const sent: string[] = [];
  const slow: number[] = [];
  const ws = {
    readyState: WebSocket.OPEN as number,
    bufferedAmount: 0,
    send: (text: string, cb: () => void) => {
      sent.push(text);
      cb();
    },
    close() {
      this.readyState = WebSocket.CLOSED;
    },
    terminate() {
      this.readyState = WebSocket.CLOSED;
    },
  };
  const log = { debug: () => undefined } as never;
  const conn = new RelayConnection(ws as unknown as WebSocket, 'c1', 'localhost', log, { sendBuffer: 2, slowClientGraceLimit: 3, maxBufferedBytes: 1 << 20 }, (c) => slow.push(c.id));
  return { conn, sent, slow };
}

const filters: NostrFilter[] = [{ tags: {}, extensions: {} }];
const scope = communityWide('c1');

describe('RelayConnection claims', () => {
  it('lets frame order decide: a later REQ for the id supersedes one still in its checks', () => {
    const { conn } = connection();
    const first = conn.noteReq('x');
    const second = conn.noteReq('x');
    const token = conn.claim('x', filters, scope, true, second);
    expect(token).toBeDefined();
    expect(conn.claim('x', filters, scope, true, first)).toBeUndefined();
    expect(conn.owns('x', token!)).toBe(true);
  });

  it('voids a REQ still in its checks when a CLOSE for the id arrives', () => {
    const { conn } = connection();
    const seq = conn.noteReq('y');
    conn.retire('y');
    expect(conn.claim('y', filters, scope, true, seq)).toBeUndefined();
    expect(conn.subscriptions.has('y')).toBe(false);
  });

  it('replaces the holder of an id with a new token and fences the old one', () => {
    const { conn } = connection();
    const a = conn.claim('z', filters, scope, true, conn.noteReq('z'))!;
    const b = conn.claim('z', filters, scope, true, conn.noteReq('z'))!;
    expect(b).not.toBe(a);
    expect(conn.retireIfOwner('z', a)).toBe(false);
    expect(conn.retireIfOwner('z', b)).toBe(true);
  });

  it('refuses claims after teardown', () => {
    const { conn } = connection();
    const seq = conn.noteReq('late');
    conn.cancel();
    expect(conn.claim('late', filters, scope, true, seq)).toBeUndefined();
    expect(conn.send(['NOTICE', 'x'])).toBe('closed');
  });
});
