/**
 * The abuse bench's control-plane probes: `/readyz` asked every 500 ms (one at a time, as a
 * kubelet does, but waiting up to 60 s so a stall is measured rather than cut at the probe's 3 s),
 * and an admin's ban: the owner key bans a key that holds a live subscription, and the probe
 * measures from sending the 9040 to its `OK` (acknowledged) and to the banned socket's
 * `CLOSED "blocked: …"` or close (enforced).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fastSigner, type FastSigner } from './fast-sign.js';
import { AbuseSocket, openAuthed, reasonKey } from './abuse-socket.js';

export interface ReadyzSample {
  readonly at: number;
  readonly ms: number;
  /** The HTTP status, or the failure. */
  readonly outcome: string;
}

const READYZ_EVERY_MS = 500;
const READYZ_TIMEOUT_MS = 60_000;
const BAN_TIMEOUT_MS = 60_000;

export class ReadyzProbe {
  readonly samples: ReadyzSample[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(httpUrl: string) {
    this.loop = this.run(`${httpUrl}/readyz`);
  }

  async stop(): Promise<ReadyzSample[]> {
    this.running = false;
    await this.loop;
    return this.samples;
  }

  private async run(url: string): Promise<void> {
    while (this.running) {
      const at = performance.now();
      const outcome = await fetch(url, { signal: AbortSignal.timeout(READYZ_TIMEOUT_MS) }).then(
        async (res) => {
          await res.arrayBuffer();
          return String(res.status);
        },
        (err: Error) => reasonKey(err.message),
      );
      this.samples.push({ at, ms: performance.now() - at, outcome });
      await sleep(READYZ_EVERY_MS);
    }
  }
}

export interface BanSample {
  readonly at: number;
  /** ms to the 9040's OK true; undefined when refused or unanswered. */
  readonly ackMs: number | undefined;
  /** ms to the banned socket's CLOSED blocked or close; undefined when neither came. */
  readonly enforcedMs: number | undefined;
  readonly outcome: string;
}

interface Target {
  signer: FastSigner;
  socket: AbuseSocket;
  revoked: Promise<number>;
}

/** The owner (RELAY_OWNER_PUBKEY) and the keys it will ban, connected before any attack. */
export class BanProbe {
  readonly samples: BanSample[] = [];
  private readonly pending: Promise<void>[] = [];

  private constructor(
    private readonly admin: AbuseSocket,
    private readonly adminSigner: FastSigner,
    private readonly targets: Target[],
  ) {}

  static async connect(relayUrl: string, owner: FastSigner, targets: number): Promise<BanProbe> {
    const admin = await openAuthed(relayUrl, owner);
    const list = await Promise.all(Array.from({ length: targets }, () => connectTarget(relayUrl)));
    return new BanProbe(admin, owner, list);
  }

  /** Bans the next target; the sample is recorded when both answers came (or timed out). */
  banNext(): void {
    const target = this.targets.shift();
    if (target === undefined) return;
    const at = performance.now();
    const timeout = <T>(value: T) => sleep(BAN_TIMEOUT_MS, value, { ref: false });
    const ack = Promise.race([this.admin.publish(this.adminSigner.sign(9040, [['p', target.signer.pubkey]], '')), timeout<[boolean, string]>([false, 'timeout'])]).then(
      ([ok, message]) => ({ ok, message, ms: performance.now() - at }),
    );
    const enforced = Promise.race([target.revoked, timeout(Number.NaN)]);
    this.pending.push(
      Promise.all([ack, enforced]).then(([a, e]) => {
        target.socket.close();
        this.samples.push({ at, ackMs: a.ok ? a.ms : undefined, enforcedMs: Number.isNaN(e) ? undefined : e - at, outcome: a.ok ? '' : reasonKey(a.message) });
      }),
    );
  }

  async stop(): Promise<BanSample[]> {
    await Promise.all(this.pending);
    this.admin.close();
    for (const t of this.targets) t.socket.close();
    return this.samples;
  }
}

async function connectTarget(relayUrl: string): Promise<Target> {
  const signer = fastSigner();
  const socket = await openAuthed(relayUrl, signer);
  const revoked = new Promise<number>((resolve) => {
    socket.onFrame = (frame) => {
      if (frame[0] === 'CLOSED' && String(frame[2]).startsWith('blocked:')) resolve(performance.now());
    };
    socket.onClose = () => resolve(performance.now());
  });
  socket.send(['REQ', 'live', { kinds: [1], limit: 0 }]);
  return { signer, socket, revoked };
}
