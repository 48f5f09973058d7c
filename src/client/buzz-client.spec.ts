/**
 * The client helper against a scripted in-process relay (a `ws` server on port 0): NIP-42, the
 * one-shot terminal-timeout rule, retryable errors, and the live-subscription backoff. Timers
 * are injected and advanced by hand, so no test waits for a real backoff or request timeout.
 */
import { verifyEvent } from 'nostr-tools/pure';
import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { resubscribeDelayMs } from './backoff.js';
import { BuzzClient } from './buzz-client.js';
import {
  AuthFailedError,
  ConnectionClosedError,
  DatabaseUnavailableError,
  QueryTimedOutError,
  RelayClosedError,
  RequestTimeoutError,
} from './client-errors.js';
import { ClientKey } from './client-key.js';
import { ClientTimers } from './client.types.js';

type Frame = [string, ...unknown[]];

/** Timers that fire only when advance() is called. */
class ManualTimers implements ClientTimers {
  private now = 0;
  private seq = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();

  setTimeout(fn: () => void, ms: number): unknown {
    this.seq += 1;
    this.due.set(this.seq, { at: this.now + ms, fn });
    return this.seq;
  }

  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }

  get pending(): number {
    return this.due.size;
  }

  advance(ms: number): void {
    this.now += ms;
    const fire = [...this.due].filter(([, t]) => t.at <= this.now).sort((a, b) => a[1].at - b[1].at);
    for (const [id, t] of fire) {
      this.due.delete(id);
      t.fn();
    }
  }
}

/** A scripted relay: sends a challenge, accepts valid NIP-42 AUTH, hands every other frame to `onFrame`. */
class FakeRelay {
  readonly received: Frame[] = [];
  onFrame: (frame: Frame, reply: (frame: unknown[]) => void) => void = () => undefined;
  refuseAuth: string | undefined;
  private socket: WebSocket | undefined;

  private constructor(private readonly server: WebSocketServer) {
    server.on('connection', (ws) => {
      this.socket = ws;
      const reply = (frame: unknown[]) => ws.send(JSON.stringify(frame));
      reply(['AUTH', 'challenge-1']);
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as Frame;
        this.received.push(frame);
        if (frame[0] === 'AUTH') return this.answerAuth(frame[1] as Parameters<typeof verifyEvent>[0], reply);
        this.onFrame(frame, reply);
      });
    });
  }

  static async start(): Promise<FakeRelay> {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    return new FakeRelay(server);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The frames of one verb received so far. */
  frames(verb: string): Frame[] {
    return this.received.filter((f) => f[0] === verb);
  }

  async waitFor(pred: (f: Frame) => boolean, count = 1): Promise<Frame[]> {
    const deadline = Date.now() + 2000;
    for (;;) {
      const hits = this.received.filter(pred);
      if (hits.length >= count) return hits;
      if (Date.now() > deadline) throw new Error(`fake relay did not receive the frame; got ${JSON.stringify(this.received)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  dropConnection(): void {
    this.socket?.terminate();
  }

  async stop(): Promise<void> {
    for (const c of this.server.clients) c.terminate();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private answerAuth(ev: Parameters<typeof verifyEvent>[0], reply: (frame: unknown[]) => void): void {
    const tag = (name: string) => ev.tags.find((t) => t[0] === name)?.[1];
    const valid = verifyEvent(ev) && ev.kind === 22242 && tag('challenge') === 'challenge-1' && tag('relay') === `${this.url}/`;
    if (this.refuseAuth !== undefined) return reply(['OK', ev.id, false, this.refuseAuth]);
    reply(['OK', ev.id, valid, valid ? '' : 'auth-required: verification failed']);
  }
}

/** Lets socket frames travel (real I/O) without touching the injected timers. */
const settle = () => new Promise((r) => setTimeout(r, 20));

let relay: FakeRelay;
let timers: ManualTimers;
let client: BuzzClient | undefined;
const key = ClientKey.generate();

beforeEach(async () => {
  relay = await FakeRelay.start();
  timers = new ManualTimers();
});

afterEach(async () => {
  client?.close();
  client = undefined;
  await relay.stop();
});

async function connect(random: () => number = () => 0): Promise<BuzzClient> {
  client = await BuzzClient.connect({ url: relay.url, secretKey: key, timers, random, requestTimeoutMs: 30_000 });
  return client;
}

/** Answers every REQ with `reason` as CLOSED. */
function closeEveryReqWith(reason: string): void {
  relay.onFrame = (f, reply) => {
    if (f[0] === 'REQ') reply(['CLOSED', f[1], reason]);
  };
}

describe('NIP-42', () => {
  it('answers the challenge with a kind-22242 event signed by the given key', async () => {
    const c = await connect();
    const [auth] = relay.frames('AUTH');
    const ev = auth[1] as { pubkey: string; kind: number };
    expect(ev.pubkey).toBe(key.pubkey);
    expect(c.pubkey).toBe(key.pubkey);
    expect(verifyEvent(auth[1] as Parameters<typeof verifyEvent>[0])).toBe(true);
  });

  it('rejects with AuthFailedError when the relay refuses', async () => {
    relay.refuseAuth = 'blocked: you are banned from this community';
    const err = await BuzzClient.connect({ url: relay.url, secretKey: key, timers }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthFailedError);
    expect((err as AuthFailedError).reason).toBe('blocked: you are banned from this community');
  });
});

describe('publish', () => {
  it('resolves with the OK flag and message, including refusals', async () => {
    const c = await connect();
    relay.onFrame = (f, reply) => {
      const ev = f[1] as { id: string; content: string };
      if (f[0] === 'EVENT') reply(['OK', ev.id, ev.content === 'fine', ev.content === 'fine' ? '' : 'rate-limited: quota exceeded; retry in 1s']);
    };
    expect(await c.publish(c.sign({ kind: 9, content: 'fine' }))).toEqual({ ok: true, message: '' });
    expect(await c.publish(c.sign({ kind: 9, content: 'again' }))).toEqual({ ok: false, message: 'rate-limited: quota exceeded; retry in 1s' });
  });
});

describe('one-shot query', () => {
  it('collects events until EOSE, then closes the subscription', async () => {
    const c = await connect();
    relay.onFrame = (f, reply) => {
      if (f[0] !== 'REQ') return;
      reply(['EVENT', f[1], { id: 'a' }]);
      reply(['EVENT', f[1], { id: 'b' }]);
      reply(['EOSE', f[1]]);
    };
    const events = await c.query({ kinds: [9], '#h': ['chan'] });
    expect(events.map((e) => e.id)).toEqual(['a', 'b']);
    const [req] = relay.frames('REQ');
    expect(req.slice(2)).toEqual([{ kinds: [9], '#h': ['chan'] }]);
    await relay.waitFor((f) => f[0] === 'CLOSE' && f[1] === req[1]);
  });

  it('treats CLOSED "error: query timed out" as terminal and never re-sends the query', async () => {
    const c = await connect();
    closeEveryReqWith('error: query timed out');
    const err = await c.query({ '#e': ['x'.repeat(64)] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueryTimedOutError);
    expect((err as QueryTimedOutError).retryable).toBe(false);
    timers.advance(120_000);
    await settle();
    expect(relay.frames('REQ')).toHaveLength(1);
    expect(timers.pending).toBe(0);
  });

  it('maps CLOSED "error: database error" to a retryable DatabaseUnavailableError', async () => {
    const c = await connect();
    closeEveryReqWith('error: database error');
    const err = await c.query({ kinds: [9] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect((err as DatabaseUnavailableError).retryable).toBe(true);
    expect(relay.frames('REQ')).toHaveLength(1);
  });

  it('maps other CLOSED reasons to a terminal RelayClosedError with the reason', async () => {
    const c = await connect();
    closeEveryReqWith('restricted: not a channel member');
    const err = await c.query({ kinds: [9] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RelayClosedError);
    expect(err).toMatchObject({ reason: 'restricted: not a channel member', retryable: false });
  });

  it('gives up after its own request timeout with a retryable RequestTimeoutError, distinct from the relay deadline', async () => {
    const c = await connect();
    const pending = c.query({ kinds: [9] }).catch((e: unknown) => e);
    const [req] = await relay.waitFor((f) => f[0] === 'REQ');
    timers.advance(29_999);
    timers.advance(1);
    const err = await pending;
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect(err).not.toBeInstanceOf(QueryTimedOutError);
    expect((err as RequestTimeoutError).retryable).toBe(true);
    await relay.waitFor((f) => f[0] === 'CLOSE' && f[1] === req[1]);
    expect(relay.frames('REQ')).toHaveLength(1);
  });

  it('rejects in-flight requests with ConnectionClosedError when the socket drops', async () => {
    const c = await connect();
    const pending = c.query({ kinds: [9] }).catch((e: unknown) => e);
    await relay.waitFor((f) => f[0] === 'REQ');
    relay.dropConnection();
    const err = await pending;
    expect(err).toBeInstanceOf(ConnectionClosedError);
    expect((err as ConnectionClosedError).retryable).toBe(true);
  });
});

describe('COUNT', () => {
  it('resolves with the count', async () => {
    const c = await connect();
    relay.onFrame = (f, reply) => f[0] === 'COUNT' && reply(['COUNT', f[1], { count: 42 }]);
    expect(await c.count({ kinds: [7], '#e': ['y'.repeat(64)] })).toBe(42);
  });

  it('rejects a deadline CLOSED with the terminal QueryTimedOutError', async () => {
    const c = await connect();
    relay.onFrame = (f, reply) => f[0] === 'COUNT' && reply(['CLOSED', f[1], 'error: query timed out']);
    await expect(c.count({ kinds: [7] })).rejects.toBeInstanceOf(QueryTimedOutError);
    timers.advance(120_000);
    await settle();
    expect(relay.frames('COUNT')).toHaveLength(1);
  });
});

describe('live subscription', () => {
  const filter = { kinds: [9], '#h': ['chan'], since: 1_700_000_000 };

  it('backs off 1 s, 2 s, 4 s … and resubscribes with the same filter, never advancing since', async () => {
    const c = await connect(() => 0);
    closeEveryReqWith('error: query timed out');
    const delays: number[] = [];
    const sub = c.subscribe(filter, () => undefined, { onRetry: (i) => delays.push(i.delayMs) });
    for (let attempt = 1; attempt <= 8; attempt++) {
      await relay.waitFor((f) => f[0] === 'REQ', attempt);
      await settle();
      expect(delays).toHaveLength(attempt);
      timers.advance(delays[attempt - 1] - 1);
      await settle();
      expect(relay.frames('REQ')).toHaveLength(attempt); // not before the delay
      timers.advance(1);
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    const reqs = await relay.waitFor((f) => f[0] === 'REQ', 9);
    for (const req of reqs) expect(req).toEqual(['REQ', sub.id, filter]);
    sub.close();
  });

  it('jitters within 1–30 s and stays at the 30 s cap indefinitely', () => {
    for (let attempt = 0; attempt < 200; attempt++) {
      for (const r of [0, 0.25, 0.5, 0.999_999]) {
        const d = resubscribeDelayMs(attempt, () => r);
        expect(d).toBeGreaterThanOrEqual(1000);
        expect(d).toBeLessThanOrEqual(30_000);
        if (attempt >= 5) expect(d).toBe(30_000);
      }
    }
    expect(resubscribeDelayMs(0, () => 0.999_999)).toBe(1499);
    expect(resubscribeDelayMs(3, () => 0.5)).toBe(10_000);
  });

  it('delivers events, treats "error: database error" as transient too, and resets the backoff after EOSE', async () => {
    const c = await connect(() => 0);
    let reqs = 0;
    relay.onFrame = (f, reply) => {
      if (f[0] !== 'REQ') return;
      reqs += 1;
      if (reqs <= 2) return reply(['CLOSED', f[1], reqs === 1 ? 'error: database error' : 'error: query timed out']);
      reply(['EVENT', f[1], { id: `ev${reqs}` }]);
      reply(['EOSE', f[1]]);
      if (reqs === 3) reply(['CLOSED', f[1], 'error: query timed out']);
    };
    const got: string[] = [];
    const delays: number[] = [];
    let eoses = 0;
    const sub = c.subscribe(filter, (ev) => got.push(ev.id), { onRetry: (i) => delays.push(i.delayMs), onEose: () => (eoses += 1) });
    await relay.waitFor((f) => f[0] === 'REQ', 1);
    await settle();
    timers.advance(1000);
    await relay.waitFor((f) => f[0] === 'REQ', 2);
    await settle();
    timers.advance(2000);
    await relay.waitFor((f) => f[0] === 'REQ', 3);
    await settle();
    expect(delays).toEqual([1000, 2000, 1000]); // the third CLOSED came after an EOSE
    timers.advance(1000);
    await relay.waitFor((f) => f[0] === 'REQ', 4);
    await settle();
    expect(got).toEqual(['ev3', 'ev4']);
    expect(eoses).toBe(2);
    expect(sub.isActive).toBe(true);
    sub.close();
    await relay.waitFor((f) => f[0] === 'CLOSE' && f[1] === sub.id);
  });

  it('ends on any other CLOSED reason without resubscribing', async () => {
    const c = await connect();
    closeEveryReqWith('restricted: not a channel member');
    const ended = new Promise<unknown>((resolve) => c.subscribe(filter, () => undefined, { onClose: resolve }));
    const err = await ended;
    expect(err).toBeInstanceOf(RelayClosedError);
    timers.advance(120_000);
    await settle();
    expect(relay.frames('REQ')).toHaveLength(1);
  });

  it('close() during a backoff cancels the pending resubscribe', async () => {
    const c = await connect();
    closeEveryReqWith('error: query timed out');
    const retried = new Promise<void>((resolve) => {
      const sub = c.subscribe(filter, () => undefined, {
        onRetry: () => {
          sub.close();
          resolve();
        },
      });
    });
    await retried;
    timers.advance(120_000);
    await settle();
    expect(relay.frames('REQ')).toHaveLength(1);
    expect(relay.frames('CLOSE')).toHaveLength(0); // the relay no longer held it
  });

  it('ends with ConnectionClosedError when the socket drops', async () => {
    const c = await connect();
    const ended = new Promise<unknown>((resolve) => c.subscribe(filter, () => undefined, { onClose: resolve }));
    await relay.waitFor((f) => f[0] === 'REQ');
    relay.dropConnection();
    expect(await ended).toBeInstanceOf(ConnectionClosedError);
  });
});
