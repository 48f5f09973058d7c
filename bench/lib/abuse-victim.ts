/**
 * The abuse bench's well-behaved client: its own key, one open channel (it created it), one
 * socket with a live subscription on it. On fixed schedules, whatever the answers do, it sends
 * an `EVENT` into its channel (every 1.2 s: under the default 60 messages a minute), a `REQ` for the
 * channel's last 20 messages (every second; CLOSE at EOSE), and opens a new socket to measure
 * connect + challenge + `AUTH` (every 2 s). Each sample keeps when it was sent, its latency and
 * its outcome: '' when served, else the refusal, `timeout` (no answer in 30 s) or the failure.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fastSigner, type FastSigner } from './fast-sign.js';
import { AbuseSocket, openAuthed, reasonKey } from './abuse-socket.js';

export type VictimProbe = 'event' | 'req' | 'auth';

export interface VictimSample {
  readonly probe: VictimProbe;
  /** performance.now() when it was sent. */
  readonly sentAt: number;
  readonly ms: number;
  readonly outcome: string;
}

export const VICTIM_TIMEOUT_MS = 30_000;
const EVERY_MS: Record<VictimProbe, number> = { event: 1200, req: 1000, auth: 2000 };

export class Victim {
  readonly samples: VictimSample[] = [];
  private readonly pending = new Set<Promise<void>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly reqWaiters = new Map<string, (outcome: string) => void>();
  private socket: AbuseSocket | undefined;
  private seq = 0;

  private constructor(
    private readonly relayUrl: string,
    private readonly headers: Record<string, string>,
    private readonly signer: FastSigner,
    private readonly channel: string,
  ) {}

  /** Connects, creates the victim's channel and opens its live subscription. */
  static async start(relayUrl: string, headers: Record<string, string>): Promise<Victim> {
    const victim = new Victim(relayUrl, headers, fastSigner(), randomUUID());
    await victim.connect();
    const [ok, message] = await victim.socket!.publish(victim.signer.sign(9007, [['h', victim.channel], ['name', 'victim']], ''));
    if (!ok) throw new Error(`victim: creating its channel was refused: ${message}`);
    return victim;
  }

  run(): void {
    for (const probe of ['event', 'req', 'auth'] as const) {
      this.timers.push(setInterval(() => this.track(probe), EVERY_MS[probe]));
    }
  }

  /** Stops the schedules and waits for the answers still due (each bounded by VICTIM_TIMEOUT_MS). */
  async stop(): Promise<VictimSample[]> {
    for (const t of this.timers) clearInterval(t);
    await Promise.all(this.pending);
    this.socket?.close();
    return this.samples;
  }

  private async connect(): Promise<AbuseSocket> {
    const socket = await openAuthed(this.relayUrl, this.signer, this.headers);
    socket.onFrame = (frame) => {
      const [type, sub, reason] = frame;
      if ((type === 'EOSE' || type === 'CLOSED') && typeof sub === 'string') {
        const waiter = this.reqWaiters.get(sub);
        this.reqWaiters.delete(sub);
        waiter?.(type === 'EOSE' ? '' : `CLOSED ${reasonKey(String(reason))}`);
      }
    };
    socket.onClose = (code) => {
      for (const waiter of this.reqWaiters.values()) waiter(`socket closed ${code}`);
      this.reqWaiters.clear();
    };
    socket.send(['REQ', 'live', { kinds: [9], '#h': [this.channel], limit: 0 }]);
    this.socket = socket;
    return socket;
  }

  /** The victim's socket, reconnected if the relay closed it (that failure is the probe's outcome). */
  private async open(): Promise<AbuseSocket> {
    if (this.socket && !this.socket.closed) return this.socket;
    this.socket = undefined;
    await this.connect();
    throw new Error('victim socket was closed; reconnected');
  }

  private track(probe: VictimProbe): void {
    const sentAt = performance.now();
    const run = this.probe(probe);
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), VICTIM_TIMEOUT_MS).unref());
    const done = Promise.race([run.catch((err: Error) => reasonKey(err.message)), timeout]).then((outcome) => {
      this.samples.push({ probe, sentAt, ms: performance.now() - sentAt, outcome });
      this.pending.delete(done);
    });
    this.pending.add(done);
  }

  private async probe(probe: VictimProbe): Promise<string> {
    if (probe === 'auth') {
      const socket = await openAuthed(this.relayUrl, this.signer, this.headers, VICTIM_TIMEOUT_MS);
      socket.close();
      return '';
    }
    const socket = await this.open();
    if (probe === 'event') {
      const [ok, message] = await socket.publish(this.signer.sign(9, [['h', this.channel]], `victim message ${this.seq++}`));
      return ok ? '' : `OK false ${reasonKey(message)}`;
    }
    const sub = `v${this.seq++}`;
    const answered = new Promise<string>((resolve) => this.reqWaiters.set(sub, resolve));
    socket.send(['REQ', sub, { kinds: [9], '#h': [this.channel], limit: 20 }]);
    const outcome = await answered;
    if (outcome === '') socket.send(['CLOSE', sub]);
    return outcome;
  }
}
