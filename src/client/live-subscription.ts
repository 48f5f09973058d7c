/**
 * A live subscription (seed 002 client rule): a `CLOSED` with the relay's deadline
 * (`error: query timed out`) or `error: database error` is transient. The subscription backs off
 * (1–30 s, exponential with jitter, then at the 30 s cap indefinitely) and sends the very same
 * REQ again: same id, same filters, `since` never advanced, because advancing it would skip the
 * events missed while it was closed. An EOSE resets the backoff. Any other `CLOSED` reason ends
 * it with a typed error.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { resubscribeDelayMs } from './backoff.js';
import { BuzzClientError, errorForClosed, isTransientForLiveSubscription } from './client-errors.js';
import { ClientFilter, ClientTimers, SubscriptionSink } from './client.types.js';

export interface LiveSubscriptionHandlers {
  /** Stored events delivered; fires again after every successful resubscribe. */
  onEose?(): void;
  /** A transient CLOSED: the subscription will resubscribe after `delayMs`. `attempt` counts from 1. */
  onRetry?(info: { reason: string; attempt: number; delayMs: number }): void;
  /** Ended by the relay (a non-transient CLOSED) or by the connection closing; not called for close(). */
  onClose?(err: BuzzClientError): void;
}

/** The connection services a subscription needs. */
export interface SubscriptionHost {
  readonly timers: ClientTimers;
  readonly random: () => number;
  route(subId: string, sink: SubscriptionSink | undefined): void;
  send(frame: unknown[]): void;
}

type State = 'open' | 'backing-off' | 'ended';

export class LiveSubscription {
  private state: State = 'open';
  private failures = 0;
  private timer: unknown;
  private readonly frame: string;

  constructor(
    readonly id: string,
    filters: readonly ClientFilter[],
    private readonly host: SubscriptionHost,
    private readonly onEvent: (ev: NostrEvent) => void,
    private readonly handlers: LiveSubscriptionHandlers = {},
  ) {
    // Serialised once: later changes to the caller's objects cannot alter a resubscribe.
    this.frame = JSON.stringify(['REQ', id, ...filters]);
    host.route(id, {
      event: (ev) => this.state === 'open' && this.onEvent(ev),
      eose: () => this.onEose(),
      count: () => undefined,
      closed: (reason) => this.onClosed(reason),
    });
    this.host.send(JSON.parse(this.frame) as unknown[]);
  }

  get isActive(): boolean {
    return this.state !== 'ended';
  }

  /** Client-initiated end: sends CLOSE when the relay still holds the subscription. */
  close(): void {
    if (this.state === 'ended') return;
    const held = this.state === 'open';
    this.end();
    if (held) this.host.send(['CLOSE', this.id]);
  }

  /** The connection went away: no frame can be sent any more. */
  connectionLost(err: BuzzClientError): void {
    if (this.state === 'ended') return;
    this.end();
    this.handlers.onClose?.(err);
  }

  private onEose(): void {
    if (this.state !== 'open') return;
    this.failures = 0;
    this.handlers.onEose?.();
  }

  private onClosed(reason: string): void {
    if (this.state !== 'open') return;
    if (!isTransientForLiveSubscription(reason)) {
      this.end();
      this.handlers.onClose?.(errorForClosed(this.id, reason));
      return;
    }
    const delayMs = resubscribeDelayMs(this.failures, this.host.random);
    this.failures += 1;
    this.state = 'backing-off';
    this.timer = this.host.timers.setTimeout(() => this.resubscribe(), delayMs);
    this.handlers.onRetry?.({ reason, attempt: this.failures, delayMs });
  }

  private resubscribe(): void {
    if (this.state !== 'backing-off') return;
    this.state = 'open';
    this.host.send(JSON.parse(this.frame) as unknown[]);
  }

  private end(): void {
    if (this.timer !== undefined) this.host.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.state = 'ended';
    this.host.route(this.id, undefined);
  }
}
