/**
 * Bans reach sockets that are already open (relay.md §2.9 "a ban after auth"). A ban is written
 * outside any connection, so an authenticated socket learns of it in one of three ways:
 *  - the immediate hook: every change to `bans` reaches every pod as a `buzz_bans` notification
 *    (BanNotifyListener → BanNotices.announce), which re-checks that key's sockets on this pod;
 *    when the listener (re)connects, or `bans` is truncated, every socket is re-checked;
 *  - the periodic sweep: every `BUZZ_BAN_RECHECK_MS` the pod reads the ban state of every
 *    (community, pubkey) it holds an authenticated socket for, and of the NIP-OA owners those
 *    sockets proved, in statements of at most SWEEP_CHUNK pairs run one after another (one writer
 *    connection at a time; a sweep still running when the next is due is skipped). It is the
 *    backstop for notifications lost without the listener noticing;
 *  - its own next REQ or COUNT, whose admission checks the ban state (ReqHandler, BanGate).
 * A banned socket has each subscription ended with `CLOSED "blocked: you are banned from this
 * community"` and is then closed with 1008 "access revoked".
 */
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { BanGate } from '../moderation/ban-gate.service.js';
import { BAN_REFUSALS } from '../moderation/ban.refusals.js';
import { BanNotices } from '../moderation/ban-notices.js';
import { ModerationRepository } from '../moderation/moderation.repository.js';
import { LiveFanout } from './live-fanout.service.js';
import { RelayConnection } from './relay-connection.js';
import { closedFrame } from './ws-reasons.js';

/** Most (community, pubkey) pairs one sweep statement reads. */
export const SWEEP_CHUNK = 1000;

@Injectable()
export class BanEnforcer implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('BanEnforcer');
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private unsubscribeResync: (() => void) | undefined;
  private sweeping = false;
  /** A resync asked for a pass while one was running: run another when it ends. */
  private sweepAgain = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly fanout: LiveFanout,
    private readonly moderation: ModerationRepository,
    private readonly bans: BanGate,
    private readonly notices: BanNotices,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), this.config.banRecheckMs);
    this.timer.unref();
    this.unsubscribe = this.notices.subscribe((communityId, pubkey) => this.recheck(communityId, pubkey));
    // A pass already running may have read before the missed change: queue one after it.
    this.unsubscribeResync = this.notices.onResync(() => this.sweep({ queue: true }));
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
    this.unsubscribeResync?.();
  }

  /**
   * Ends a banned key's connection: every subscription is retired with a terminal CLOSED (so no
   * live delivery or history page queued behind it is sent), then the socket closes.
   */
  revoke(conn: RelayConnection): void {
    if (conn.isCancelled) return;
    for (const [subId, sub] of [...conn.subscriptions]) {
      if (conn.retireIfOwner(subId, sub.token)) conn.send(closedFrame(subId, BAN_REFUSALS.banned));
    }
    conn.log.info({ connId: conn.id }, 'connection revoked: pubkey banned');
    conn.cancel(1008, 'access revoked');
  }

  /**
   * One pass over this pod's authenticated sockets. A failed read keeps them; the next pass
   * retries. A pass asked for while one runs is skipped, or with `queue` runs after it.
   */
  async sweep(opts: { queue?: boolean } = {}): Promise<void> {
    if (this.sweeping) {
      if (opts.queue) this.sweepAgain = true;
      return;
    }
    this.sweeping = true;
    try {
      const holders = this.holdersByKey();
      const keys = [...holders.keys()];
      for (let i = 0; i < keys.length; i += SWEEP_CHUNK) {
        const pairs = keys.slice(i, i + SWEEP_CHUNK).map(splitKey);
        for (const key of await this.moderation.bannedAmong(pairs)) {
          for (const conn of holders.get(key) ?? []) this.revoke(conn);
        }
      }
    } catch (err) {
      this.logger.warn({ err }, 'ban re-check failed; open sockets are re-checked at the next pass');
    } finally {
      this.sweeping = false;
    }
    if (this.sweepAgain) {
      this.sweepAgain = false;
      await this.sweep();
    }
  }

  /** The immediate hook: re-reads one key's ban state and revokes its sockets (and its agents') here. */
  private async recheck(communityId: string, pubkey: string): Promise<void> {
    const held = [...this.fanout.connections()].filter((c) => c.communityId === communityId && subjectsOf(c).includes(pubkey));
    if (held.length === 0) return;
    try {
      // Fresh: announce follows the ban's commit, so a lookup that started before it must not answer.
      if (!(await this.bans.isBanned(communityId, pubkey, undefined, { fresh: true }))) return;
    } catch (err) {
      this.logger.warn({ err }, 'ban re-check failed; the periodic pass retries');
      return;
    }
    for (const conn of held) this.revoke(conn);
  }

  /** `community:pubkey` → the open authenticated sockets that key (as session or proved owner) holds. */
  private holdersByKey(): Map<string, RelayConnection[]> {
    const holders = new Map<string, RelayConnection[]>();
    for (const conn of this.fanout.connections()) {
      for (const subject of subjectsOf(conn)) {
        const key = `${conn.communityId}:${subject}`;
        const list = holders.get(key);
        if (list) list.push(conn);
        else holders.set(key, [conn]);
      }
    }
    return holders;
  }
}

/** The keys whose ban ends this socket: its pubkey and the NIP-OA owner it proved. */
function subjectsOf(conn: RelayConnection): string[] {
  if (conn.isCancelled || conn.authState !== 'authenticated' || !conn.pubkey) return [];
  return conn.nipOaOwner === undefined || conn.nipOaOwner === conn.pubkey ? [conn.pubkey] : [conn.pubkey, conn.nipOaOwner];
}

function splitKey(key: string): { communityId: string; pubkey: string } {
  const at = key.indexOf(':');
  return { communityId: key.slice(0, at), pubkey: key.slice(at + 1) };
}
