/**
 * One reconnecting client of the storm bench: opens a WebSocket, answers the NIP-42 challenge with
 * its own key (a prepared signer: lib/fast-sign.ts), or, against a relay that sends no challenge
 * (`auth: false`, nostream), goes straight to the REQ; sends one history REQ and, on a retryable
 * `CLOSED` (`error: …`),
 * sends it again after an exponential, jittered back-off, at most `maxRetries` times. It ends
 * in exactly one outcome; a served client keeps its socket (and its live subscription) open until
 * `close()`, as a real client would.
 */
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import type { FastSigner } from './fast-sign.js';
import { backoffMs } from './storm-stats.js';

export type StormResult =
  /** EOSE reached (possibly after retries). */
  | 'served'
  /** The socket closed or failed before EOSE. */
  | 'dropped'
  /** AUTH refused, or a CLOSED that is not retryable. */
  | 'refused'
  /** Still CLOSED `error: …` after the last retry. */
  | 'gave_up'
  /** No outcome by the client's deadline. */
  | 'unfinished';

export interface StormOutcome {
  result: StormResult;
  retries: number;
  /** History events received before the EOSE. */
  events: number;
  /** ms from `new WebSocket` to AUTH's OK, and to the final EOSE (served only). */
  authMs?: number;
  eoseMs?: number;
  /** Each retryable CLOSED reason this client got. */
  retryReasons: string[];
  /** Why it was dropped or refused: close code and reason, socket error, or the refusal text. */
  detail?: string;
  /** Where it was when dropped: before the challenge, waiting for AUTH's OK, or in the REQ. */
  stage?: 'connect' | 'auth' | 'req';
}

export interface StormClientOptions {
  /** The relay's ws:// URL (also the NIP-42 `relay` tag). */
  relayUrl: string;
  signer: FastSigner;
  /** Wait for the NIP-42 challenge and answer it before the REQ (false: REQ on open). */
  auth: boolean;
  filter: object;
  maxRetries: number;
  backoffBaseMs: number;
  deadlineMs: number;
}

export interface StormClient {
  readonly outcome: Promise<StormOutcome>;
  close(): void;
}

/** Every host resolves to IPv4 loopback at once (a thousand getaddrinfo calls would queue on libuv's pool). */
const loopback: LookupFunction = (_host, options, callback) => {
  if (options.all) (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
};

/**
 * The load generator shares the machine's cores with the relay, so a frame is looked at as bytes
 * first: the 50 history frames each client gets (and the publisher's live events) are counted by
 * their `["EVENT","<sub id>"` prefix, never decoded or parsed; only the few control frames (AUTH,
 * OK, EOSE, CLOSED) are parsed as JSON. UTF-8 validation is skipped for the same reason (the
 * relay's frames are its own JSON; a bad one would fail JSON.parse or be counted as an event).
 */
const EVENT_HEAD = Buffer.from('["EVENT","');

function startsWith(frame: Buffer, prefix: Buffer): boolean {
  return frame.length >= prefix.length && frame.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

export function startStormClient(opts: StormClientOptions): StormClient {
  const started = performance.now();
  const ws = new WebSocket(opts.relayUrl, { perMessageDeflate: false, lookup: loopback, skipUTF8Validation: true });
  const out: StormOutcome = { result: 'unfinished', retries: 0, events: 0, retryReasons: [] };
  let stage: 'connect' | 'auth' | 'req' = 'connect';
  let authId = '';
  let subId = '';
  let subHead = EVENT_HEAD;
  let settled = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let settle!: (o: StormOutcome) => void;
  const outcome = new Promise<StormOutcome>((resolve) => (settle = resolve));

  const finish = (result: StormResult, detail?: string) => {
    if (settled) return;
    settled = true;
    clearTimeout(deadline);
    clearTimeout(retryTimer);
    out.result = result;
    if (detail !== undefined) out.detail = detail;
    if (result !== 'served') out.stage = stage;
    settle(out);
  };
  const deadline = setTimeout(() => finish('unfinished'), opts.deadlineMs);

  const sendReq = () => {
    subId = `h${out.retries}`;
    subHead = Buffer.from(`["EVENT","${subId}"`);
    out.events = 0;
    ws.send(JSON.stringify(['REQ', subId, opts.filter]));
  };

  const onFrame = (frame: Buffer) => {
    if (startsWith(frame, EVENT_HEAD)) {
      // History frames are only counted; live ones after EOSE are ignored.
      if (!settled && stage === 'req' && startsWith(frame, subHead)) out.events += 1;
      return;
    }
    const [type, a, b, c] = JSON.parse(frame.toString()) as unknown[];
    if (type === 'AUTH' && stage === 'connect' && typeof a === 'string') {
      stage = 'auth';
      const auth = opts.signer.sign(22242, [['relay', opts.relayUrl], ['challenge', a]], '');
      authId = auth.id;
      ws.send(JSON.stringify(['AUTH', auth]));
    } else if (type === 'OK' && a === authId && stage === 'auth') {
      if (b !== true) return finish('refused', `AUTH: ${String(c)}`);
      out.authMs = performance.now() - started;
      stage = 'req';
      sendReq();
    } else if (type === 'EOSE' && a === subId && !settled) {
      out.eoseMs = performance.now() - started;
      finish('served');
    } else if (type === 'CLOSED' && a === subId && !settled) {
      const reason = String(b ?? '');
      if (!reason.startsWith('error:')) return finish('refused', `CLOSED ${reason}`);
      out.retryReasons.push(reason);
      if (out.retries >= opts.maxRetries) return finish('gave_up', reason);
      retryTimer = setTimeout(sendReq, backoffMs(out.retries, opts.backoffBaseMs, Math.random()));
      out.retries += 1;
    }
  };

  if (!opts.auth) {
    ws.once('open', () => {
      stage = 'req';
      sendReq();
    });
  }
  ws.on('message', (data: Buffer) => onFrame(data));
  ws.on('close', (code, reason) => finish('dropped', `close ${code}${reason.length > 0 ? ` ${reason.toString()}` : ''}`));
  ws.on('error', (err) => finish('dropped', `socket error: ${(err as NodeJS.ErrnoException).code ?? err.message}`));

  return {
    outcome,
    close: () => {
      finish('unfinished');
      ws.removeAllListeners('close');
      ws.on('error', () => undefined);
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close();
    },
  };
}
