/**
 * A counting semaphore whose waits are bounded and whose permits are shared fairly between
 * tenants: `admit(waitMs, tenant)` resolves with a permit, or with the reason there was none once
 * `waitMs` passed. A tenant is whoever the caller charges the work to (the relay passes the
 * client's key); the gate knows nothing else about it.
 *
 * - **Share.** A tenant holds at most `share` permits at once; its further callers wait in its own
 *   queue, behind its own work, and never take a permit another tenant could use.
 * - **Hand-off.** A released permit goes to the waiting tenant that has used the gate least:
 *   permit-time held now plus what it held before, decayed with a USAGE_HALF_LIFE_MS half-life.
 *   A tenant whose reads are cheap is served before one whose reads hold permits for seconds,
 *   however many keys the latter uses. Ties (a storm of tenants that never held one) go to the
 *   oldest waiter, so equal tenants are served first come, first served. Within a tenant, FIFO.
 * - **Unattributed** callers (no tenant: the relay's own reads) are one FIFO queue with no share
 *   and go first. A gate used only without tenants is the plain FIFO semaphore it always was.
 * - **Rescue** (optional, `preemptAfterMs`). A tenant that holds nothing and has waited that long
 *   for a full gate has one holder stopped for it: the permit held at least `preemptMinHoldMs` by
 *   the tenant that used the gate most (more than the waiter), if its caller gave a `preempt`
 *   callback. The caller stops its work (the relay cancels the statement) and releases the
 *   permit, which then goes to the least-used waiter. Without it, keys that each hold their share
 *   of long reads could keep a light tenant waiting past its deadline however fair the hand-off.
 *   Short holds (a storm of cheap reads) are never stopped.
 * - **Refusal.** A wait that ends without a permit is `share` when the tenant held its whole share
 *   at that moment (its own work is what it waited behind: the client should slow down), else
 *   `capacity` (the gate was full with other tenants' work: the relay is busy). A gate without a
 *   share (share = capacity) only ever refuses for capacity.
 */

/** One admitted unit of work. Releasing is idempotent. */
export interface Permit {
  release(): void;
}

/** Why a bounded wait ended without a permit. */
export type GateRefusal = 'share' | 'capacity';

export interface PermitGateOptions {
  /** Most permits one tenant may hold at once (default: the capacity, i.e. no share). */
  readonly share?: number;
  /** Milliseconds clock (tests pass a fake one); default `performance.now`. */
  readonly now?: () => number;
  /** Rescue a waiting tenant that holds nothing after this long (default: never). */
  readonly preemptAfterMs?: number;
  /** Only a permit held at least this long may be stopped for a rescue (default 1000). */
  readonly preemptMinHoldMs?: number;
}

/** How fast a tenant's past use is forgiven: it halves every 10 s. */
export const USAGE_HALF_LIFE_MS = 10_000;
/** Idle tenants whose decayed use fell below this (ms) are forgotten. */
const FORGET_BELOW_MS = 1;

/** `percent` of `capacity`, rounded down, at least one: the per-tenant share of a gate. */
export function shareOf(capacity: number, percent: number): number {
  return Math.max(1, Math.min(capacity, Math.floor((capacity * percent) / 100)));
}

interface Waiter {
  readonly seq: number;
  grant(permit: Permit): void;
  readonly preempt?: () => void;
}

/** A permit being held, as the rescue sees it. */
interface Hold {
  readonly tenant: Tenant;
  readonly started: number;
  readonly preempt: (() => void) | undefined;
  preempted: boolean;
}

interface Tenant {
  readonly key: string | undefined;
  held: number;
  readonly queue: Waiter[];
  /** Permit-milliseconds of finished holds, decayed to `usageAt`. */
  usage: number;
  usageAt: number;
  /** Sum of the start times of the holds running now. */
  holdStarts: number;
}

export class PermitGate {
  readonly share: number;
  private available: number;
  private readonly tenants = new Map<string, Tenant>();
  private readonly unattributed: Tenant;
  /** Tenants with at least one waiter. */
  private readonly ready = new Set<Tenant>();
  private readonly holds = new Set<Hold>();
  private readonly now: () => number;
  private readonly preemptAfterMs: number | undefined;
  private readonly preemptMinHoldMs: number;
  private waiters = 0;
  private seq = 0;
  private lastForget = 0;

  constructor(
    readonly capacity: number,
    options: PermitGateOptions = {},
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`a permit gate needs at least one permit, got ${capacity}`);
    this.available = capacity;
    this.share = Math.max(1, Math.min(capacity, options.share ?? capacity));
    this.now = options.now ?? (() => performance.now());
    this.preemptAfterMs = options.preemptAfterMs;
    this.preemptMinHoldMs = options.preemptMinHoldMs ?? 1000;
    this.unattributed = this.newTenant(undefined);
  }

  /** Permits currently held. */
  get inUse(): number {
    return this.capacity - this.available;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.waiters;
  }

  /** Permits `tenant` holds now. */
  heldBy(tenant: string): number {
    return this.tenants.get(tenant)?.held ?? 0;
  }

  /** A permit, or undefined once `waitMs` passed without one. */
  async acquire(waitMs: number, tenant?: string): Promise<Permit | undefined> {
    const outcome = await this.admit(waitMs, tenant);
    return typeof outcome === 'string' ? undefined : outcome;
  }

  /**
   * A permit, or why there was none once `waitMs` passed. `preempt`: how to stop the work this
   * permit is for, should a rescue pick it (it must then end the work and release the permit).
   */
  admit(waitMs: number, tenant?: string, preempt?: () => void): Promise<Permit | GateRefusal> {
    const t = this.tenantFor(tenant);
    // Every waiter that could use a free permit already has one (dispatch), so a free permit
    // is this caller's unless its own share is full.
    if (this.available > 0 && this.canHold(t)) return Promise.resolve(this.take(t, preempt));
    return new Promise((resolve) => {
      const waiter: Waiter = {
        seq: this.seq++,
        grant: (permit) => {
          clearTimeout(timer);
          clearTimeout(rescue);
          resolve(permit);
        },
        preempt,
      };
      const timer = setTimeout(() => {
        clearTimeout(rescue);
        const at = t.queue.indexOf(waiter);
        if (at >= 0) this.dequeue(t, at);
        resolve(this.overShare(t) ? 'share' : 'capacity');
        this.forgetIfIdle(t);
      }, waitMs);
      const rescue = this.preemptAfterMs !== undefined && t !== this.unattributed && this.preemptAfterMs < waitMs ? setTimeout(() => this.rescue(t), this.preemptAfterMs) : undefined;
      t.queue.push(waiter);
      this.ready.add(t);
      this.waiters += 1;
    });
  }

  /** The tenant holds its whole share, and a share smaller than the gate (else the gate is simply full). */
  private overShare(t: Tenant): boolean {
    return !this.canHold(t) && this.share < this.capacity;
  }

  private canHold(t: Tenant): boolean {
    return t === this.unattributed || t.held < this.share;
  }

  private take(t: Tenant, preempt: (() => void) | undefined): Permit {
    const started = this.now();
    this.available -= 1;
    t.held += 1;
    t.holdStarts += started;
    const hold: Hold = { tenant: t, started, preempt, preempted: false };
    this.holds.add(hold);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.holds.delete(hold);
        this.finish(t, started);
      },
    };
  }

  /**
   * `waiting` holds nothing and still waits for a full gate: stop the longest-held permit of the
   * most-used tenant that used more than it, if that permit may be stopped.
   */
  private rescue(waiting: Tenant): void {
    if (waiting.queue.length === 0 || waiting.held > 0 || this.available > 0) return;
    const now = this.now();
    const waiterScore = this.score(waiting, now);
    let victim: Hold | undefined;
    let victimScore = waiterScore;
    for (const hold of this.holds) {
      if (hold.preempt === undefined || hold.preempted || hold.tenant === this.unattributed || now - hold.started < this.preemptMinHoldMs) continue;
      const score = this.score(hold.tenant, now);
      if (score > victimScore || (victim !== undefined && score === victimScore && hold.started < victim.started)) {
        victim = hold;
        victimScore = score;
      }
    }
    if (victim === undefined) return;
    victim.preempted = true;
    victim.preempt!();
  }

  private finish(t: Tenant, started: number): void {
    const now = this.now();
    t.held -= 1;
    t.holdStarts -= started;
    if (t !== this.unattributed) t.usage = this.decayed(t, now) + (now - started);
    t.usageAt = now;
    this.available += 1;
    this.dispatch();
    this.forgetIfIdle(t);
  }

  /** Grants free permits to the waiting tenants that used the gate least. */
  private dispatch(): void {
    while (this.available > 0) {
      const next = this.nextTenant();
      if (next === undefined) return;
      const waiter = this.dequeue(next, 0);
      waiter.grant(this.take(next, waiter.preempt));
    }
  }

  private nextTenant(): Tenant | undefined {
    if (this.unattributed.queue.length > 0) return this.unattributed;
    const now = this.now();
    let best: Tenant | undefined;
    let bestScore = 0;
    for (const t of this.ready) {
      if (!this.canHold(t)) continue;
      const score = this.score(t, now);
      if (best === undefined || score < bestScore || (score === bestScore && t.queue[0].seq < best.queue[0].seq)) {
        best = t;
        bestScore = score;
      }
    }
    return best;
  }

  private dequeue(t: Tenant, at: number): Waiter {
    const [waiter] = t.queue.splice(at, 1);
    this.waiters -= 1;
    if (t.queue.length === 0) this.ready.delete(t);
    return waiter;
  }

  /** Permit-time used: past holds decayed, plus the holds running now. */
  private score(t: Tenant, now: number): number {
    return this.decayed(t, now) + (t.held * now - t.holdStarts);
  }

  /** Past use decayed to `now`; below FORGET_BELOW_MS it counts as none (and ties go first come, first served). */
  private decayed(t: Tenant, now: number): number {
    if (t.usage === 0) return 0;
    const left = t.usage * Math.pow(2, -(now - t.usageAt) / USAGE_HALF_LIFE_MS);
    return left < FORGET_BELOW_MS ? 0 : left;
  }

  private tenantFor(key: string | undefined): Tenant {
    if (key === undefined) return this.unattributed;
    let t = this.tenants.get(key);
    if (t === undefined) {
      t = this.newTenant(key);
      this.tenants.set(key, t);
    }
    return t;
  }

  private newTenant(key: string | undefined): Tenant {
    return { key, held: 0, queue: [], usage: 0, usageAt: this.now(), holdStarts: 0 };
  }

  /**
   * An idle tenant is kept while its past use still counts against it; at most once a half-life
   * the idle tenants whose use has decayed away are dropped, so the map follows recent tenants only.
   */
  private forgetIfIdle(t: Tenant): void {
    if (t.key === undefined || t.held > 0 || t.queue.length > 0) return;
    const now = this.now();
    if (t.usage === 0) this.tenants.delete(t.key);
    if (now - this.lastForget < USAGE_HALF_LIFE_MS) return;
    this.lastForget = now;
    for (const [key, other] of this.tenants) {
      if (other.held === 0 && other.queue.length === 0 && this.decayed(other, now) === 0) this.tenants.delete(key);
    }
  }
}
