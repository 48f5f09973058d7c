/**
 * The relay's two Redis connections (BUZZ_REDIS_URL): one for commands and
 * publishes, one held in subscriber mode for the fan-out topics.
 *
 * Failure behaviour is chosen so that a Redis outage costs availability of the
 * shared features only, never memory or the pod itself:
 * - no offline queue: a command issued while disconnected fails at once instead
 *   of waiting in an unbounded buffer; callers decide (fail closed for quotas and
 *   the replay set, drop for cross-pod publishes);
 * - a command timeout, so a frozen server cannot pile up waiting callers;
 * - reconnects forever with capped back-off; the subscriber re-issues every
 *   pattern the pod still needs each time it becomes ready.
 * Start-up does not wait for Redis: a pod whose Redis is down serves its own
 * clients and reports `redis: "disconnected"` on /readyz.
 */
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Redis, RedisOptions } from 'ioredis';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { gauge } from '@buzz-relay/read-path/internal';

export type RedisState = 'disabled' | 'connected' | 'disconnected';
export type TopicListener = (topic: string, message: string) => void;
/** Called when the subscriber connection is ready again; `lostAt` is when it was last lost (or the pod started). */
export type ResubscribeListener = (lostAt: number) => void;

const COMMAND_TIMEOUT_MS = 2000;
const CONNECT_TIMEOUT_MS = 2000;
const MAX_RECONNECT_DELAY_MS = 2000;
const QUIT_TIMEOUT_MS = 2000;

/** Thrown by callers that need Redis while BUZZ_REDIS_URL is unset (a programming error). */
export class RedisDisabledError extends Error {
  constructor() {
    super('BUZZ_REDIS_URL is not configured');
  }
}

@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  readonly enabled: boolean;
  private readonly logger = new Logger('Redis');
  private readonly connectedGauge = gauge({ name: 'buzz_redis_connected', help: '1 while the Redis connection is ready, by client', labelNames: ['client'] });
  private command: Redis | undefined;
  private subscriber: Redis | undefined;
  /** Pattern → how many holders need it; the subscriber re-issues all of them on every ready. */
  private readonly patterns = new Map<string, number>();
  private readonly listeners = new Set<TopicListener>();
  private readonly resubscribeListeners = new Set<ResubscribeListener>();
  /** When the subscriber connection last stopped receiving; the pod's start until it first connects. */
  private subscriberLostAt: number | undefined = Date.now();
  private closing = false;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.enabled = config.scaleOut.redisUrl !== undefined;
  }

  onModuleInit(): void {
    const url = this.config.scaleOut.redisUrl;
    if (url === undefined) return;
    this.command = this.connect(url, 'command');
    this.subscriber = this.connect(url, 'subscriber');
    this.subscriber.on('ready', () => this.resubscribe());
    this.subscriber.on('close', () => (this.subscriberLostAt ??= Date.now()));
    this.subscriber.on('pmessage', (_pattern: string, topic: string, message: string) => {
      for (const listener of this.listeners) listener(topic, message);
    });
  }

  get state(): RedisState {
    if (!this.command || !this.subscriber) return 'disabled';
    return this.command.status === 'ready' && this.subscriber.status === 'ready' ? 'connected' : 'disconnected';
  }

  /** True while commands (and publishes) can be sent. */
  get commandReady(): boolean {
    return this.command?.status === 'ready';
  }

  /** The command connection. Commands fail fast (no offline queue) while it is down. */
  client(): Redis {
    if (!this.command) throw new RedisDisabledError();
    return this.command;
  }

  publish(topic: string, message: string): Promise<number> {
    return this.client().publish(topic, message);
  }

  onTopicMessage(listener: TopicListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Listens for the subscriber connection coming back (messages published meanwhile were missed). */
  onResubscribed(listener: ResubscribeListener): () => void {
    this.resubscribeListeners.add(listener);
    return () => this.resubscribeListeners.delete(listener);
  }

  /** The patterns the subscriber currently holds (or re-issues on its next ready). */
  retainedPatterns(): string[] {
    return [...this.patterns.keys()];
  }

  /** Subscribes to pattern while at least one holder retains it. */
  retainPattern(pattern: string): void {
    const held = this.patterns.get(pattern) ?? 0;
    this.patterns.set(pattern, held + 1);
    if (held === 0 && this.subscriber?.status === 'ready') this.subscriber.psubscribe(pattern).catch(() => undefined);
  }

  releasePattern(pattern: string): void {
    const held = this.patterns.get(pattern) ?? 0;
    if (held > 1) return void this.patterns.set(pattern, held - 1);
    this.patterns.delete(pattern);
    if (held === 1 && this.subscriber?.status === 'ready') this.subscriber.punsubscribe(pattern).catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await Promise.all([this.command, this.subscriber].map((c) => (c ? quit(c) : undefined)));
  }

  private connect(url: string, role: 'command' | 'subscriber'): Redis {
    const options: RedisOptions = {
      enableOfflineQueue: false,
      // A command in flight when the connection drops fails then, and is not replayed later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: role === 'command' ? COMMAND_TIMEOUT_MS : undefined,
      connectTimeout: CONNECT_TIMEOUT_MS,
      autoResubscribe: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
      connectionName: `buzz-relay-${role}`,
    };
    const client = new Redis(url, options);
    let wasReady = false;
    let lastError = '';
    client.on('ready', () => {
      this.connectedGauge.set({ client: role }, 1);
      wasReady = true;
      lastError = '';
      this.logger.log(`redis ${role} connection ready`);
    });
    client.on('close', () => {
      this.connectedGauge.set({ client: role }, 0);
      if (wasReady && !this.closing) this.logger.warn(`redis ${role} connection lost; reconnecting`);
      wasReady = false;
    });
    client.on('error', (err: Error) => {
      // Logged once per distinct error while down, not once per reconnect attempt.
      if (err.message === lastError || this.closing) return;
      lastError = err.message;
      this.logger.warn({ role, err }, `redis ${role} connection error`);
    });
    this.connectedGauge.set({ client: role }, 0);
    return client;
  }

  private resubscribe(): void {
    const all = [...this.patterns.keys()];
    if (all.length > 0) this.subscriber?.psubscribe(...all).catch(() => undefined);
    const lostAt = this.subscriberLostAt;
    this.subscriberLostAt = undefined;
    if (lostAt === undefined) return;
    for (const listener of this.resubscribeListeners) listener(lostAt);
  }
}

async function quit(client: Redis): Promise<void> {
  const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), QUIT_TIMEOUT_MS).unref());
  const done = await Promise.race([client.quit().then(() => 'ok' as const, () => 'failed' as const), timer]);
  if (done !== 'ok') client.disconnect();
}
