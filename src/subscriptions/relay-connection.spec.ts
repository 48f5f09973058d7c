import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
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

describe('RelayConnection outbound batching', () => {
  it('sends the frames of one turn in one socket write, in order', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const received: string[] = [];
    const allReceived = new Promise<void>((resolve) =>
      client.on('message', (data) => {
        received.push(String(data));
        if (received.length === 21) resolve();
      }),
    );
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await accepted;
    try {
      const socket = (serverSide as unknown as { _socket: { _writev: (chunks: unknown[], cb: unknown) => void; _write: (chunk: unknown, enc: unknown, cb: unknown) => void } })._socket;
      const writes: number[] = [];
      const writev = socket._writev.bind(socket);
      const write = socket._write.bind(socket);
      socket._writev = (chunks: unknown[], cb: unknown) => (writes.push(chunks.length), writev(chunks, cb));
      socket._write = (chunk: unknown, enc: unknown, cb: unknown) => (writes.push(1), write(chunk, enc, cb));
      const log = { debug: () => undefined } as never;
      const conn = new RelayConnection(serverSide, 'c1', 'localhost', log, { sendBuffer: 100, slowClientGraceLimit: 3, maxBufferedBytes: 1 << 20 }, () => undefined);
      for (let i = 0; i < 20; i++) expect(conn.send(['EVENT', 's', { n: i }])).toBe('sent');
      expect(conn.send(['EOSE', 's'])).toBe('sent');
      await allReceived;
      expect(received).toEqual([...Array.from({ length: 20 }, (_, i) => JSON.stringify(['EVENT', 's', { n: i }])), '["EOSE","s"]']);
      expect(writes).toHaveLength(1);
    } finally {
      client.close();
      server.close();
    }
  });
});
