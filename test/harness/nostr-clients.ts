/**
 * Clients for end-to-end tests: nostr-tools' Relay (a real client, as apps use
 * it) and a raw frame client for asserting exact wire behaviour.
 */
import { finalizeEvent, generateSecretKey, getPublicKey, type EventTemplate, type VerifiedEvent } from 'nostr-tools/pure';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import WebSocket from 'ws';

useWebSocketImplementation(WebSocket);

export interface Identity {
  readonly sk: Uint8Array;
  readonly pubkey: string;
  sign(t: Partial<EventTemplate> & { kind: number }): VerifiedEvent;
}

export function newIdentity(): Identity {
  const sk = generateSecretKey();
  return {
    sk,
    pubkey: getPublicKey(sk),
    sign: (t) => finalizeEvent({ created_at: Math.floor(Date.now() / 1000), tags: [], content: '', ...t }, sk),
  };
}

export function authTemplate(challenge: string, relayUrl: string): EventTemplate {
  return {
    kind: 22242,
    created_at: Math.floor(Date.now() / 1000),
    tags: [
      ['relay', relayUrl],
      ['challenge', challenge],
    ],
    content: '',
  };
}

/** A nostr-tools relay connection, authenticated with NIP-42. */
export async function connectNostrTools(url: string, id: Identity): Promise<Relay> {
  const relay = await Relay.connect(url);
  const deadline = Date.now() + 5000;
  while (!(relay as unknown as { challenge?: string }).challenge) {
    if (Date.now() > deadline) throw new Error('no AUTH challenge from relay');
    await new Promise((r) => setTimeout(r, 5));
  }
  await relay.auth(async (t) => finalizeEvent(t, id.sk));
  return relay;
}

export type Frame = [string, ...unknown[]];

/** An event as it travels on the wire (nostr-tools marks signed objects with a hidden symbol). */
export function wire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A raw HTTP request with an explicit Host header (fetch does not let a caller set one). */
export function httpRequest(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * A NIP-98 `Authorization` header value for a POST of `body` to `url` (kind 27235, signed by id).
 * `nonce` adds a random tag, so that two requests in one second do not share an event id (the
 * relay refuses a replayed one).
 */
export function nip98Header(id: Identity, url: string, body: string, createdAt = Math.floor(Date.now() / 1000), nonce = false): string {
  const ev = finalizeEvent(
    {
      kind: 27235,
      created_at: createdAt,
      tags: [
        ['u', url],
        ['method', 'POST'],
        ['payload', createHash('sha256').update(body).digest('hex')],
        ...(nonce ? [['nonce', randomUUID()]] : []),
      ],
      content: '',
    },
    id.sk,
  );
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString('base64')}`;
}

/** An upgrade the relay answered with an HTTP status instead of a WebSocket. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly retryAfter: string | undefined,
  ) {
    super(`HTTP ${status}`);
  }
}

/** Raw frames in and out, with waits on what arrives. */
export class RawClient {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | undefined;
  challenge = '';
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      let frame: Frame;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        frame = ['<non-json>', data.toString()];
      }
      if (frame[0] === 'AUTH' && typeof frame[1] === 'string') this.challenge = frame[1];
      this.frames.push(frame);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
  }

  /** `localAddress`: the client's source address (any of 127.0.0.0/8 reaches a loopback relay). */
  static async connect(url: string, headers: Record<string, string> = {}, localAddress?: string): Promise<RawClient> {
    const ws = new WebSocket(url, { headers, maxPayload: 64 * 1024 * 1024, localAddress });
    const client = new RawClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => reject(new UpgradeRefused(res.statusCode ?? 0, body, res.headers['retry-after'])));
      });
    });
    await client.waitFor((f) => f[0] === 'AUTH');
    return client;
  }

  /** Connects and authenticates as id; resolves after the relay's OK. */
  static async authed(url: string, id: Identity, localAddress?: string): Promise<RawClient> {
    const client = await RawClient.connect(url, {}, localAddress);
    const auth = finalizeEvent(authTemplate(client.challenge, url), id.sk);
    client.send(['AUTH', auth]);
    const ok = await client.waitFor((f) => f[0] === 'OK' && f[1] === auth.id);
    if (ok[2] !== true) throw new Error(`auth refused: ${String(ok[3])}`);
    return client;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Resolves with the first frame (received from `from` on) matching pred. */
  async waitFor(pred: (f: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.frames.slice(from).find(pred);
      if (hit) return hit;
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting; frames: ${JSON.stringify(this.frames)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for frame; got ${JSON.stringify(this.frames).slice(0, 2000)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async publish(ev: VerifiedEvent): Promise<[boolean, string]> {
    const from = this.frames.length;
    this.send(['EVENT', ev]);
    const ok = await this.waitFor((f) => f[0] === 'OK' && f[1] === ev.id, 5000, from);
    return [ok[2] as boolean, ok[3] as string];
  }

  /** Sends a REQ and collects EVENTs until EOSE or CLOSED. */
  async req(subId: string, ...filters: object[]): Promise<{ events: VerifiedEvent[]; end: Frame }> {
    const from = this.frames.length;
    this.send(['REQ', subId, ...filters]);
    const end = await this.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId, 5000, from);
    const events = this.frames
      .slice(from)
      .filter((f) => f[0] === 'EVENT' && f[1] === subId)
      .map((f) => f[2] as VerifiedEvent);
    return { events, end };
  }

  async waitClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('socket did not close');
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closed;
  }

  close(): void {
    this.ws.close();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
