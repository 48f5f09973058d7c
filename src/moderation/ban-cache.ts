import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';

/** Most (community, pubkey) ban states one pod keeps; the least recently used goes first. */
export const BAN_CACHE_MAX_ENTRIES = 50_000;

/** What one writer read said of a key: banned until `bannedUntilMs` (Infinity: no expiry), or not banned. */
interface Entry {
  readonly bannedUntilMs: number | undefined;
  readonly readAtMs: number;
}

const keyOf = (communityId: string, pubkey: string) => `${communityId}:${pubkey}`;

/**
 * This pod's memory of ban states, so REQ and COUNT admission need no writer read. It is only as good as
 * the `buzz_bans` notifications that invalidate it, so:
 * - it keeps entries only while the ban listener is LISTENing (`trusted`); losing the listener or
 *   getting it back empties it, and admission reads the writer meanwhile;
 * - every change (a notification, a flush) bumps `version`; an answer read from the writer is kept
 *   only if the version it noted before its statement is still current, so a notification that
 *   arrives while a read is under way can never be overwritten by that read's older answer;
 * - a ban with an expiry is answered from memory until it expires, then read again;
 * - "not banned" is kept at most `BUZZ_BAN_RECHECK_MS`: even if notifications were lost without
 *   the listener noticing, admission is never staler than the periodic re-check of open sockets.
 */
@Injectable()
export class BanCache {
  private readonly entries = new Map<string, Entry>();
  private readonly clearTtlMs: number;
  private trusted = false;
  private currentVersion = 0;
  private readonly changeListeners: Array<(key: string | undefined) => void> = [];

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'banRecheckMs'>) {
    this.clearTtlMs = config.banRecheckMs;
  }

  /** Called on every change: with the `community:pubkey` key, or undefined when everything went. */
  onChange(listener: (key: string | undefined) => void): void {
    this.changeListeners.push(listener);
  }

  get version(): number {
    return this.currentVersion;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The listener is (or is no longer) LISTENing; either way nothing known so far is trusted. */
  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    this.flush();
  }

  flush(): void {
    this.entries.clear();
    this.currentVersion += 1;
    for (const listener of this.changeListeners) listener(undefined);
  }

  invalidate(communityId: string, pubkey: string): void {
    const key = keyOf(communityId, pubkey);
    this.entries.delete(key);
    this.currentVersion += 1;
    for (const listener of this.changeListeners) listener(key);
  }

  /** True banned, false not banned, undefined unknown (read the writer). */
  lookup(communityId: string, pubkey: string, nowMs = Date.now()): boolean | undefined {
    if (!this.trusted) return undefined;
    const key = keyOf(communityId, pubkey);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const fresh = entry.bannedUntilMs !== undefined ? nowMs < entry.bannedUntilMs : nowMs - entry.readAtMs < this.clearTtlMs;
    this.entries.delete(key);
    if (!fresh) return undefined;
    this.entries.set(key, entry); // most recently used last
    return entry.bannedUntilMs !== undefined;
  }

  /** Keeps a writer answer, unless anything changed since `version` was noted before its statement. */
  store(version: number, communityId: string, pubkey: string, bannedUntilMs: number | undefined, readAtMs = Date.now()): void {
    if (!this.trusted || version !== this.currentVersion) return;
    const key = keyOf(communityId, pubkey);
    this.entries.delete(key);
    if (this.entries.size >= BAN_CACHE_MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { bannedUntilMs, readAtMs });
  }
}
