import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { NostrFilter } from '../nostr/nostr.types.js';
import { communityWide } from '../channels/read-scope.js';
import { OutputBudget } from './output-budget.js';
import { TERMINAL_RESERVE_BYTES } from './connection-output.js';
import { OutputEvents, RelayConnection } from './relay-connection.js';
import { WS_REFUSALS } from './ws.refusals.js';

const log = { debug: () => undefined } as never;
const quiet: OutputEvents = { slowClientDisconnected: () => undefined, subscriptionShed: () => undefined };

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
  const events: OutputEvents = { slowClientDisconnected: (c) => slow.push(c.id), subscriptionShed: () => undefined };
  const conn = new RelayConnection(ws as unknown as WebSocket, 'c1', 'localhost', log, { sendBuffer: 2, slowClientGraceLimit: 3, maxQueuedBytes: 1 << 20 }, events);
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
      const conn = new RelayConnection(serverSide, 'c1', 'localhost', log, { sendBuffer: 100, slowClientGraceLimit: 3, maxQueuedBytes: 1 << 20 }, quiet);
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

/** A client that never reads: its writes never complete until it is dropped. */
function stalled(budget: OutputBudget, maxQueuedBytes = 1000, graceLimit = 100) {
  const sent: string[] = [];
  const pending: Array<() => void> = [];
  const closes: Array<[number | undefined, string | undefined]> = [];
  const cut: number[] = [];
  const shed: number[] = [];
  const ws = {
    readyState: WebSocket.OPEN as number,
    send: (text: string, cb: () => void) => {
      sent.push(text);
      pending.push(cb);
    },
    close(code?: number, reason?: string) {
      closes.push([code, reason]);
      this.readyState = WebSocket.CLOSING;
    },
    terminate() {
      this.readyState = WebSocket.CLOSED;
    },
  };
  const events: OutputEvents = { slowClientDisconnected: (c) => cut.push(c.id), subscriptionShed: (c) => shed.push(c.id) };
  const conn = new RelayConnection(ws as unknown as WebSocket, 'c1', 'localhost', log, { sendBuffer: 1000, slowClientGraceLimit: graceLimit, maxQueuedBytes }, events, budget);
  const drain = () => pending.splice(0).forEach((cb) => cb());
  return { conn, sent, closes, cut, shed, drain };
}

const frameOf = (n: number) => 'x'.repeat(n);

describe('RelayConnection output budget', () => {
  it('counts queued bytes per connection and process-wide, and gives them back as writes complete', () => {
    const budget = new OutputBudget(1 << 20);
    const a = stalled(budget);
    expect(a.conn.sendRaw(frameOf(300))).toBe('sent');
    expect(a.conn.sendRaw(frameOf(200))).toBe('sent');
    expect(a.conn.queuedBytes).toBe(500);
    expect(budget.total).toBe(500);
    a.drain();
    expect(a.conn.queuedBytes).toBe(0);
    expect(budget.total).toBe(0);
  });

  it('is backlogged past half its budget or after a send that did not fit, until it drains to half', () => {
    const a = stalled(new OutputBudget(1 << 20), 1000);
    a.conn.sendRaw(frameOf(500));
    expect(a.conn.outputBacklogged()).toBe(false);
    a.conn.sendRaw(frameOf(1));
    expect(a.conn.outputBacklogged()).toBe(true);
    a.drain();
    expect(a.conn.outputBacklogged()).toBe(false);
    a.conn.sendRaw(frameOf(400));
    expect(a.conn.sendRaw(frameOf(700))).toBe('full');
    // Under half queued, yet a send did not fit: backlogged until the queue drains.
    expect(a.conn.outputBacklogged()).toBe(true);
    a.drain();
    expect(a.conn.outputBacklogged()).toBe(false);
  });

  it('refuses data past the connection budget but still queues a terminal CLOSED from the reserve', () => {
    const budget = new OutputBudget(1 << 20);
    const a = stalled(budget, 1000);
    expect(a.conn.sendRaw(frameOf(1000))).toBe('sent');
    expect(a.conn.sendRaw(frameOf(10))).toBe('full');
    expect(a.conn.hasOutputRoom()).toBe(false);
    const token = a.conn.claim('s', filters, scope)!;
    a.conn.shedSubscription('s', token);
    expect(a.sent.at(-1)).toBe(JSON.stringify(['CLOSED', 's', 'error: slow consumer: output buffer full']));
    expect(a.shed).toHaveLength(1);
    expect(a.conn.subscriptions.has('s')).toBe(false);
    expect(a.conn.isCancelled).toBe(false);
  });

  it('disconnects a client with no room even for a terminal CLOSED, and releases its bytes', () => {
    const budget = new OutputBudget(1 << 20);
    const a = stalled(budget, 1000);
    a.conn.sendRaw(frameOf(1000 + TERMINAL_RESERVE_BYTES));
    expect(a.conn.sendClosed('s', WS_REFUSALS.internalError)).toBe('full');
    expect(a.cut).toHaveLength(1);
    expect(a.closes).toEqual([[1008, 'slow consumer: output buffer full']]);
    expect(a.conn.isCancelled).toBe(true);
    expect(budget.total).toBe(0);
    a.drain();
    expect(budget.total).toBe(0);
  });

  it('disconnects a client whose sends stay full past the grace limit', () => {
    const budget = new OutputBudget(1 << 20);
    const a = stalled(budget, 100, 3);
    a.conn.sendRaw(frameOf(100));
    expect(a.conn.sendRaw('y')).toBe('full');
    expect(a.conn.hasOutputRoom()).toBe(false);
    expect(a.cut).toHaveLength(0);
    expect(a.conn.sendRaw('y')).toBe('closed');
    expect(a.cut).toHaveLength(1);
  });

  it('cuts off the largest holder when the process budget is reached, and the sender gets its frame through', () => {
    const budget = new OutputBudget(5000);
    const big = stalled(budget, 4000);
    const small = stalled(budget, 4000);
    const reader = stalled(budget, 4000);
    big.conn.sendRaw(frameOf(3000));
    small.conn.sendRaw(frameOf(1000));
    reader.conn.sendRaw(frameOf(1000));
    expect(budget.total).toBe(5000);
    expect(reader.conn.sendRaw(frameOf(10))).toBe('sent');
    expect(big.cut).toHaveLength(1);
    expect(big.conn.isCancelled).toBe(true);
    expect(small.conn.isCancelled).toBe(false);
    expect(budget.total).toBe(2010);
  });

  it('never lets the process total pass its budget by more than one frame', () => {
    const budget = new OutputBudget(10_000);
    const clients = Array.from({ length: 20 }, () => stalled(budget, 4000));
    let peak = 0;
    for (let round = 0; round < 50; round++) {
      for (const c of clients) {
        c.conn.sendRaw(frameOf(500));
        peak = Math.max(peak, budget.total);
      }
    }
    expect(peak).toBeLessThanOrEqual(10_000 + 500);
    expect(clients.filter((c) => c.conn.isCancelled).length).toBeGreaterThan(0);
  });
});
