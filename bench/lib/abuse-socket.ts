/**
 * One WebSocket of the abuse bench (victim, admin, ban targets and attackers alike): connects with
 * optional extra headers, records the NIP-42 challenge, answers it, and hands every other frame to
 * `onFrame`. Frames that start `["EVENT",` are passed unparsed (attackers only count them); the
 * rest are parsed. A refused upgrade is reported by its HTTP status (`http 404`, `http 503`).
 */
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import type { FastSigner } from './fast-sign.js';

/** Every host resolves to IPv4 loopback at once (thousands of getaddrinfo calls would queue on libuv's pool). */
const loopback: LookupFunction = (_host, options, callback) => {
  if (options.all) (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
};

export type Frame = unknown[];

/** A refusal or a failure as a short stable key: digits folded, at most 90 characters. */
export function reasonKey(text: string): string {
  return text.replace(/\d+/g, 'N').slice(0, 90);
}

export class AbuseSocket {
  challenge: string | undefined;
  closed: { code: number; reason: string } | undefined;
  /** Parsed frames other than AUTH challenges; `raw` is set (and `frame` empty) for EVENT frames. */
  onFrame: ((frame: Frame, raw?: string) => void) | undefined;
  onClose: ((code: number, reason: string) => void) | undefined;
  private readonly okWaiters = new Map<string, (ok: boolean, message: string) => void>();
  private challengeWaiter: (() => void) | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => this.onMessage(data.toString()));
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.challengeWaiter?.();
      for (const waiter of this.okWaiters.values()) waiter(false, `socket closed ${code}`);
      this.okWaiters.clear();
      this.onClose?.(code, reason.toString());
    });
    ws.on('error', () => undefined);
  }

  /** Resolves once open; rejects with `http <status>` for a refused upgrade, or the socket error. */
  static open(url: string, headers: Record<string, string> = {}, timeoutMs = 30_000): Promise<AbuseSocket> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024, headers, lookup: loopback, handshakeTimeout: timeoutMs });
    const socket = new AbuseSocket(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(socket));
      ws.once('unexpected-response', (_req, res) => {
        reject(new Error(`http ${res.statusCode}`));
        res.resume();
        ws.terminate();
      });
      ws.once('error', (err) => {
        const status = /Unexpected server response: (\d+)/.exec(err.message)?.[1];
        reject(new Error(status ? `http ${status}` : err.message));
      });
      ws.once('close', (code) => reject(new Error(`closed ${code} before open`)));
    });
  }

  /** Waits for the challenge (false when none came in time or the socket closed). */
  waitChallenge(timeoutMs: number): Promise<boolean> {
    if (this.challenge !== undefined) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.challengeWaiter = undefined;
        resolve(this.challenge !== undefined);
      };
      this.challengeWaiter = done;
    });
  }

  /** Sends AUTH for the challenge; resolves with the OK. */
  auth(signer: FastSigner, relayUrl: string): Promise<[boolean, string]> {
    return this.publish(signer.sign(22242, [['relay', relayUrl], ['challenge', this.challenge ?? '']], ''), 'AUTH');
  }

  /** Sends an EVENT (or AUTH) frame; resolves with its OK (or `false, socket closed …`). */
  publish(event: { id: string }, verb: 'EVENT' | 'AUTH' = 'EVENT'): Promise<[boolean, string]> {
    return new Promise((resolve) => {
      if (this.closed) return resolve([false, `socket closed ${this.closed.code}`]);
      this.okWaiters.set(event.id, (ok, message) => resolve([ok, message]));
      this.ws.send(JSON.stringify([verb, event]));
    });
  }

  send(frame: Frame | string): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  close(): void {
    if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
    else this.ws.close();
  }

  private onMessage(text: string): void {
    if (text.startsWith('["EVENT",')) return this.onFrame?.([], text);
    let frame: Frame;
    try {
      frame = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    if (frame[0] === 'AUTH' && typeof frame[1] === 'string') {
      this.challenge = frame[1];
      this.challengeWaiter?.();
      return;
    }
    if (frame[0] === 'OK' && typeof frame[1] === 'string') {
      const waiter = this.okWaiters.get(frame[1]);
      if (waiter) {
        this.okWaiters.delete(frame[1]);
        return waiter(frame[2] === true, String(frame[3] ?? ''));
      }
    }
    this.onFrame?.(frame);
  }
}

/** Opens a socket, waits for the challenge and authenticates; throws with the stage that failed. */
export async function openAuthed(url: string, signer: FastSigner, headers: Record<string, string> = {}, timeoutMs = 30_000): Promise<AbuseSocket> {
  const socket = await AbuseSocket.open(url, headers, timeoutMs);
  if (!(await socket.waitChallenge(timeoutMs))) {
    socket.close();
    throw new Error(socket.closed ? `closed ${socket.closed.code} before the challenge` : 'no AUTH challenge');
  }
  const [ok, message] = await socket.auth(signer, url);
  if (!ok) {
    socket.close();
    throw new Error(`AUTH refused: ${message}`);
  }
  return socket;
}
