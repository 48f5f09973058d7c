/**
 * LISTENs for `buzz_bans` (migration 0021: every change to `bans`) on one dedicated writer
 * connection, outside the pools, so that:
 * - BanCache may answer REQ and COUNT admission from memory (it keeps entries only while this
 *   connection LISTENs);
 * - a ban reaches the banned key's open sockets on every pod within notification latency
 *   (BanNotices.announce → BanEnforcer), not at the next periodic re-check.
 * The connection is pinged every LISTENER_PING_MS; a ping that fails or whose answer has not
 * arrived within LISTENER_PING_TIMEOUT_MS (an answer that arrived while this process's event loop
 * was held is not late), an error or an end counts as lost: the cache stops being trusted
 * (admission reads the writer again) and the pod reconnects with jittered exponential back-off.
 * Once LISTENing again, the pod re-checks every open socket (bans written while nothing listened
 * were not announced). Failing to connect never stops the relay: it serves with uncached reads.
 */
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Client, Notification } from 'pg';
import type { AppConfig } from '../config/app-config.js';
import { loopFairDeadline } from '@buzz-relay/read-path/internal';
import { APP_CONFIG } from '../config/config.tokens.js';
import { DatabaseService } from '@buzz-relay/read-path';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { BanCache } from './ban-cache.js';
import { BanNotices } from './ban-notices.js';

export const BANS_CHANNEL = 'buzz_bans';
/** `application_name` of the listener's session: find it in `pg_stat_activity`. */
export const BAN_LISTENER_APPLICATION_NAME = 'buzz-relay-ban-listener';
export const LISTENER_PING_MS = 10_000;
export const LISTENER_PING_TIMEOUT_MS = 5_000;
export const LISTENER_CONNECT_TIMEOUT_MS = 5_000;
export const LISTENER_BACKOFF_MIN_MS = 250;
export const LISTENER_BACKOFF_MAX_MS = 10_000;

@Injectable()
export class BanNotifyListener implements OnApplicationShutdown {
  private readonly logger = new Logger('BanNotifyListener');
  private current: Client | undefined;
  private listening = false;
  private failures = 0;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly cache: BanCache,
    private readonly notices: BanNotices,
    private readonly metrics: RelayMetrics,
    database: DatabaseService,
  ) {
    this.metrics.banListenerConnected.set(0);
    // After the migrations (the trigger exists); never holds up start-up.
    database.afterStart(async () => this.start());
  }

  /** Starts listening in the background (idempotent). */
  start(): void {
    if (this.stopped || this.current || this.retryTimer) return;
    void this.connect();
  }

  get isListening(): boolean {
    return this.listening;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.current;
    if (client) this.drop(client);
    this.cache.setTrusted(false);
    this.metrics.banListenerConnected.set(0);
  }

  private async connect(): Promise<void> {
    this.retryTimer = undefined;
    if (this.stopped) return;
    const client = new Client({
      connectionString: this.config.database.url,
      application_name: BAN_LISTENER_APPLICATION_NAME,
      keepAlive: true,
      connectionTimeoutMillis: LISTENER_CONNECT_TIMEOUT_MS,
    });
    this.current = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (msg) => this.onNotification(client, msg));
    try {
      await client.connect();
      await client.query(`LISTEN ${BANS_CHANNEL}`);
    } catch (err) {
      this.lost(client, err as Error);
      return;
    }
    if (client !== this.current) return;
    this.listening = true;
    this.failures = 0;
    this.cache.setTrusted(true);
    this.metrics.banListenerConnected.set(1);
    this.logger.log('listening for ban changes');
    this.schedulePing(client);
    // Bans written while nothing listened reached no socket: re-check them all.
    void this.notices.resync();
  }

  private onNotification(client: Client, msg: Notification): void {
    if (client !== this.current || msg.channel !== BANS_CHANNEL) return;
    const payload = msg.payload ?? '';
    const at = payload.indexOf(':');
    if (payload === '*' || at <= 0) {
      this.cache.flush();
      void this.notices.resync();
      return;
    }
    const communityId = payload.slice(0, at);
    const pubkey = payload.slice(at + 1);
    this.cache.invalidate(communityId, pubkey);
    void this.notices.announce(communityId, pubkey);
  }

  private schedulePing(client: Client): void {
    this.pingTimer = setTimeout(() => void this.ping(client), LISTENER_PING_MS);
    this.pingTimer.unref();
  }

  private async ping(client: Client): Promise<void> {
    if (client !== this.current) return;
    try {
      // Loop-fair: an answer that arrived while the event loop was held does not count as late.
      await loopFairDeadline(client.query('select 1'), LISTENER_PING_TIMEOUT_MS, () => new Error(`ping took longer than ${LISTENER_PING_TIMEOUT_MS} ms`));
      if (client === this.current) this.schedulePing(client);
    } catch (err) {
      this.lost(client, err as Error);
    }
  }

  /** The connection can no longer be trusted to deliver every notification. */
  private lost(client: Client, err: Error): void {
    if (client !== this.current) return;
    this.current = undefined;
    const wasListening = this.listening;
    this.listening = false;
    this.cache.setTrusted(false);
    this.metrics.banListenerConnected.set(0);
    this.drop(client);
    if (this.stopped) return;
    const delay = Math.min(LISTENER_BACKOFF_MAX_MS, LISTENER_BACKOFF_MIN_MS * 2 ** this.failures) * (0.5 + Math.random() / 2);
    this.failures += 1;
    this.logger.warn(
      { err, retryInMs: Math.round(delay) },
      wasListening ? 'ban listener lost; REQ and COUNT read bans from the writer until it is back' : 'ban listener could not connect',
    );
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  private drop(client: Client): void {
    clearTimeout(this.pingTimer);
    if (client === this.current) this.current = undefined;
    this.listening = false;
    client.removeAllListeners('notification');
    client.removeAllListeners('end');
    client.removeAllListeners('error');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
  }
}
