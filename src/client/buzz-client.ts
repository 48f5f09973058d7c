/**
 * A small Nostr client over `ws` that follows seed 002's client rules (relay.md §2.12):
 *
 * - `connect()` answers the relay's NIP-42 challenge with the given key before anything else.
 * - `query()` is one-shot: REQ until EOSE (then CLOSE) or CLOSED. `error: query timed out` rejects
 *   with the terminal `QueryTimedOutError` and the query is never re-sent by this client;
 *   `error: database error` rejects with the retryable `DatabaseUnavailableError`; no answer
 *   within `requestTimeoutMs` rejects with the retryable `RequestTimeoutError`. Retrying is the
 *   caller's decision, guided by `err.retryable`.
 * - `count()` follows the same rules for NIP-45 COUNT; `publish()` resolves with the relay's OK.
 * - `subscribe()` opens a live subscription that survives deadline CLOSEDs (see LiveSubscription).
 *
 * No automatic reconnect: when the socket closes, requests in flight reject with
 * `ConnectionClosedError` and live subscriptions end through their `onClose`.
 */
import WebSocket from 'ws';
import { NostrEvent } from '../nostr/nostr.types.js';
import { AuthFailedError, BuzzClientError, ConnectionClosedError, errorForClosed, RequestTimeoutError } from './client-errors.js';
import { ClientKey, EventTemplate } from './client-key.js';
import { ClientFilter, ClientTimers, PublishResult, SubscriptionSink, SYSTEM_TIMERS } from './client.types.js';
import { LiveSubscription, LiveSubscriptionHandlers } from './live-subscription.js';

/** The desktop's request timeout; the relay's 20 s statement deadline stays under it. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const NIP42_AUTH_KIND = 22242;

export interface BuzzClientOptions {
  readonly url: string;
  /** 32 bytes, 64 hex characters, or a ClientKey. */
  readonly secretKey: Uint8Array | string | ClientKey;
  readonly requestTimeoutMs?: number;
  /** Extra handshake headers (a test may set Host). */
  readonly headers?: Record<string, string>;
  readonly timers?: ClientTimers;
  readonly random?: () => number;
}

interface Settle<T> {
  resolve(value: T): void;
  reject(err: BuzzClientError): void;
}

/** Registers a request's routing; returns its cleanup, told whether the request timed out. */
type Register<T> = (settle: Settle<T>) => (timedOut: boolean) => void;

export class BuzzClient {
  readonly key: ClientKey;
  readonly timers: ClientTimers;
  readonly random: () => number;
  private readonly requestTimeoutMs: number;
  private readonly sinks = new Map<string, SubscriptionSink>();
  private readonly okWaiters = new Map<string, Array<(result: PublishResult) => void>>();
  private readonly inflight = new Set<(err: BuzzClientError) => void>();
  private readonly live = new Set<LiveSubscription>();
  private closedBy: ConnectionClosedError | undefined;
  private readonly challenge: Promise<string>;
  private onChallenge: (challenge: string) => void = () => undefined;
  private nextSubId = 0;

  private constructor(
    private readonly ws: WebSocket,
    readonly url: string,
    key: ClientKey,
    options: BuzzClientOptions,
  ) {
    this.key = key;
    this.timers = options.timers ?? SYSTEM_TIMERS;
    this.random = options.random ?? Math.random;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.challenge = new Promise((resolve) => (this.onChallenge = resolve));
    this.ws.on('message', (data) => this.onMessage(data.toString()));
    this.ws.on('close', (code, reason) => this.onSocketClosed(`${code}${reason.length ? ` ${reason.toString()}` : ''}`));
    this.ws.on('error', () => undefined); // 'close' follows and carries the outcome
  }

  /** Opens the socket and completes NIP-42 AUTH; rejects with AuthFailedError when refused. */
  static async connect(options: BuzzClientOptions): Promise<BuzzClient> {
    const key = options.secretKey instanceof ClientKey ? options.secretKey : new ClientKey(options.secretKey); // before any socket
    const ws = new WebSocket(options.url, { headers: options.headers, maxPayload: 64 * 1024 * 1024, handshakeTimeout: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS });
    const client = new BuzzClient(ws, options.url, key, options);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (err) => reject(new ConnectionClosedError(err.message)));
      ws.once('unexpected-response', (_req, res) => reject(new ConnectionClosedError(`HTTP ${res.statusCode} on upgrade`)));
    });
    try {
      await client.authenticate();
    } catch (err) {
      client.close();
      throw err;
    }
    return client;
  }

  get pubkey(): string {
    return this.key.pubkey;
  }

  sign(template: EventTemplate): NostrEvent {
    return this.key.sign(template);
  }

  /** Sends EVENT and resolves with the relay's OK (a refusal is a result, not an error). */
  publish(event: NostrEvent): Promise<PublishResult> {
    return this.request<PublishResult>(`EVENT ${event.id}`, (settle) => {
      const cleanup = this.awaitOk(event.id, settle.resolve);
      this.send(['EVENT', event]);
      return cleanup;
    });
  }

  /** One-shot read: the stored events matching `filters`, in the relay's order. */
  query(filters: ClientFilter | readonly ClientFilter[]): Promise<NostrEvent[]> {
    const subId = this.newSubId('q');
    return this.request<NostrEvent[]>(`REQ ${subId}`, (settle) => {
      const events: NostrEvent[] = [];
      this.sinks.set(subId, {
        event: (ev) => events.push(ev),
        eose: () => {
          this.send(['CLOSE', subId]);
          settle.resolve(events);
        },
        count: () => undefined,
        closed: (reason) => settle.reject(errorForClosed(subId, reason)),
      });
      this.send(['REQ', subId, ...asList(filters)]);
      return (timedOut) => {
        this.sinks.delete(subId);
        if (timedOut) this.send(['CLOSE', subId]);
      };
    });
  }

  /** NIP-45 COUNT. */
  count(filters: ClientFilter | readonly ClientFilter[]): Promise<number> {
    const subId = this.newSubId('c');
    return this.request<number>(`COUNT ${subId}`, (settle) => {
      this.sinks.set(subId, {
        event: () => undefined,
        eose: () => undefined,
        count: (n) => settle.resolve(n),
        closed: (reason) => settle.reject(errorForClosed(subId, reason)),
      });
      this.send(['COUNT', subId, ...asList(filters)]);
      return () => this.sinks.delete(subId);
    });
  }

  /** A live subscription; see LiveSubscription for its CLOSED handling. */
  subscribe(filters: ClientFilter | readonly ClientFilter[], onEvent: (ev: NostrEvent) => void, handlers: LiveSubscriptionHandlers = {}): LiveSubscription {
    if (this.closedBy) throw this.closedBy;
    for (const ended of [...this.live].filter((s) => !s.isActive)) this.live.delete(ended);
    const host = {
      timers: this.timers,
      random: this.random,
      route: (subId: string, sink: SubscriptionSink | undefined) => (sink ? this.sinks.set(subId, sink) : this.sinks.delete(subId)),
      send: (frame: unknown[]) => this.send(frame),
    };
    const sub = new LiveSubscription(this.newSubId('s'), asList(filters), host, onEvent, {
      ...handlers,
      onClose: (err) => {
        this.live.delete(sub);
        handlers.onClose?.(err);
      },
    });
    this.live.add(sub);
    return sub;
  }

  close(): void {
    for (const sub of this.live) sub.close();
    this.live.clear();
    this.ws.close();
  }

  private async authenticate(): Promise<void> {
    const challenge = await this.request<string>('AUTH challenge', (settle) => {
      void this.challenge.then(settle.resolve);
      return () => undefined;
    });
    const auth = this.key.sign({ kind: NIP42_AUTH_KIND, tags: [['relay', relayTag(this.url)], ['challenge', challenge]] });
    const answer = await this.request<PublishResult>('AUTH', (settle) => {
      const cleanup = this.awaitOk(auth.id, settle.resolve);
      this.send(['AUTH', auth]);
      return cleanup;
    });
    if (!answer.ok) throw new AuthFailedError(answer.message);
  }

  /** One request: settles once, on its answer, its timeout or the socket closing. */
  private request<T>(what: string, register: Register<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closedBy) return reject(this.closedBy);
      let settled = false;
      let cleanup: (timedOut: boolean) => void = () => undefined;
      const finish = (timedOut: boolean, done: () => void) => {
        if (settled) return;
        settled = true;
        this.timers.clearTimeout(timer);
        this.inflight.delete(abort);
        cleanup(timedOut);
        done();
      };
      const abort = (err: BuzzClientError) => finish(false, () => reject(err));
      const timer = this.timers.setTimeout(() => finish(true, () => reject(new RequestTimeoutError(what, this.requestTimeoutMs))), this.requestTimeoutMs);
      this.inflight.add(abort);
      cleanup = register({ resolve: (value) => finish(false, () => resolve(value)), reject: abort });
    });
  }

  private awaitOk(eventId: string, resolve: (result: PublishResult) => void): () => void {
    const waiters = this.okWaiters.get(eventId) ?? [];
    waiters.push(resolve);
    this.okWaiters.set(eventId, waiters);
    return () => {
      const left = (this.okWaiters.get(eventId) ?? []).filter((w) => w !== resolve);
      if (left.length) this.okWaiters.set(eventId, left);
      else this.okWaiters.delete(eventId);
    };
  }

  private send(frame: unknown[]): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private newSubId(prefix: string): string {
    this.nextSubId += 1;
    return `${prefix}${this.nextSubId}`;
  }

  private onMessage(text: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (!Array.isArray(frame) || typeof frame[1] !== 'string') return;
    const [verb, first] = frame as [unknown, string, ...unknown[]];
    if (verb === 'AUTH') return this.onChallenge(first);
    if (verb === 'OK') return void [...(this.okWaiters.get(first) ?? [])].forEach((w) => w({ ok: frame[2] === true, message: String(frame[3] ?? '') }));
    const sink = this.sinks.get(first);
    if (!sink) return;
    if (verb === 'EVENT') sink.event(frame[2] as NostrEvent);
    else if (verb === 'EOSE') sink.eose();
    else if (verb === 'COUNT') sink.count(Number((frame[2] as { count?: unknown } | undefined)?.count));
    else if (verb === 'CLOSED') sink.closed(String(frame[2] ?? ''));
  }

  private onSocketClosed(detail: string): void {
    this.closedBy = new ConnectionClosedError(detail);
    for (const abort of [...this.inflight]) abort(this.closedBy);
    for (const sub of [...this.live]) sub.connectionLost(this.closedBy);
    this.live.clear();
  }
}

function asList(filters: ClientFilter | readonly ClientFilter[]): ClientFilter[] {
  return Array.isArray(filters) ? [...(filters as readonly ClientFilter[])] : [filters as ClientFilter];
}

/** NIP-42 `relay` tag: the relay checks scheme and host (relay.md §2.5), so the URL's origin. */
function relayTag(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}/`;
}
