/**
 * Presence (kind 20001, relay.md §5.1 step 5): the latest status string per
 * (community, pubkey), kept for the presence TTL and never stored in Postgres.
 * With BUZZ_REDIS_URL it lives in Redis (`SET … EX`), shared by every pod;
 * without it, in a bounded in-process map with the same TTL.
 *
 * A presence write that cannot reach Redis is logged and counted, and the event
 * is still fanned out: presence is advisory. A presence read that cannot reach
 * Redis throws PresenceUnavailableError, so the bridge answers 503 rather than
 * reporting everyone as absent.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { counter } from '@buzz-relay/read-path/internal';
import { presenceKey } from './redis-keys.js';
import { RedisService } from './redis.service.js';
import { TtlMap } from './ttl-map.js';

export const PRESENCE_STATUS_MAX_BYTES = 128;
export const OFFLINE_STATUS = 'offline';
const MEMORY_MAX_ENTRIES = 100_000;

export class PresenceUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`presence store unavailable: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

@Injectable()
export class PresenceService {
  private readonly logger = new Logger('Presence');
  private readonly ttlSecs: number;
  private readonly memory: TtlMap<string>;
  private readonly errors = counter({ name: 'buzz_presence_store_errors_total', help: 'Presence store operations that failed, by operation', labelNames: ['op'] });
  private lastErrorLog = 0;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly redis: RedisService,
  ) {
    this.ttlSecs = config.scaleOut.presenceTtlSecs;
    this.memory = new TtlMap(this.ttlSecs * 1000, MEMORY_MAX_ENTRIES);
  }

  /** Applies an accepted kind-20001 event: `offline` clears, anything else sets. */
  async apply(communityId: string, event: NostrEvent): Promise<void> {
    const status = presenceStatus(event.content);
    if (status === OFFLINE_STATUS) await this.clear(communityId, event.pubkey);
    else await this.guard('set', () => this.set(communityId, event.pubkey, status));
  }

  /** Clears a pubkey's presence (its `offline`, or its last socket on this pod closing). */
  async clear(communityId: string, pubkey: string): Promise<void> {
    await this.guard('clear', async () => {
      if (this.redis.enabled) await this.redis.client().del(presenceKey(communityId, pubkey));
      else this.memory.delete(presenceKey(communityId, pubkey));
    });
  }

  /** The live status of each listed pubkey that has one, in the order asked. */
  async lookup(communityId: string, pubkeys: readonly string[]): Promise<Array<{ pubkey: string; status: string }>> {
    const unique = [...new Set(pubkeys)];
    if (unique.length === 0) return [];
    const keys = unique.map((pk) => presenceKey(communityId, pk));
    let values: Array<string | null | undefined>;
    if (!this.redis.enabled) values = keys.map((k) => this.memory.get(k));
    else {
      try {
        values = await this.redis.client().mget(keys);
      } catch (err) {
        this.errors.inc({ op: 'read' });
        throw new PresenceUnavailableError(err);
      }
    }
    return unique.flatMap((pubkey, i) => (typeof values[i] === 'string' ? [{ pubkey, status: values[i] }] : []));
  }

  private async set(communityId: string, pubkey: string, status: string): Promise<void> {
    const key = presenceKey(communityId, pubkey);
    if (this.redis.enabled) await this.redis.client().set(key, status, 'EX', this.ttlSecs);
    else this.memory.set(key, status);
  }

  private async guard(op: 'set' | 'clear', work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.errors.inc({ op });
      const now = Date.now();
      if (now - this.lastErrorLog < 10_000) return;
      this.lastErrorLog = now;
      this.logger.warn({ op, err }, `presence ${op} failed`);
    }
  }
}

/**
 * The status a presence event carries: a bare string, or `{"status": "…"}`,
 * truncated to 128 UTF-8 bytes without splitting a character.
 */
export function presenceStatus(content: string): string {
  let status = content;
  if (content.trimStart().startsWith('{')) {
    try {
      const parsed = JSON.parse(content) as { status?: unknown };
      if (typeof parsed?.status === 'string') status = parsed.status;
    } catch {
      // Not JSON after all: the content itself is the status.
    }
  }
  return truncateUtf8(status, PRESENCE_STATUS_MAX_BYTES);
}

function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let out = '';
  for (const ch of text) {
    bytes += Buffer.byteLength(ch);
    if (bytes > maxBytes) break;
    out += ch;
  }
  return out;
}
