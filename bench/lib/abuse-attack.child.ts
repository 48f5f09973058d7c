/**
 * The abuse bench's attacker, in a process of its own (lib/abuse-attack.ts starts it) so that its
 * sockets and frames do not share an event loop with the victim whose latencies are measured.
 * Messages from the parent: `prepare` (keys made, frames built, a `frames` attack's sockets opened
 * and authenticated), `go`, `stop` (answers with the tally of what was sent and what came back).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fastSigner, type FastSigner } from './fast-sign.js';
import { AbuseSocket, openAuthed, reasonKey, type Frame } from './abuse-socket.js';
import { filtersJson, preauthFrame, type AttackPlan } from './abuse-scenarios.js';
import type { AttackMessage, AttackReply, AttackTally } from './abuse-attack.js';

const send = (m: AttackReply) => process.send!(m);
/** An attacker socket stops queueing frames past this much unsent output (its own memory, not the relay's). */
const MAX_BUFFERED_BYTES = 16 * 2 ** 20;
const RECONNECT_MS = 250;
const OPEN_CONCURRENCY = 200;

const tally: AttackTally = {};
function count(category: string, key: string, n = 1): void {
  const c = (tally[category] ??= {});
  c[key] = (c[key] ?? 0) + n;
}

let plan: AttackPlan;
let running = false;
const sockets = new Set<AbuseSocket>();
const timers: NodeJS.Timeout[] = [];
const loops: Promise<void>[] = [];

/** Tallies a frame an attacker received; returns the sub id of an EOSE (the caller may CLOSE it). */
function onAnswer(frame: Frame, raw: string | undefined): string | undefined {
  if (raw !== undefined) {
    count('answers', 'EVENT');
    count('answers', 'event_bytes', raw.length);
    return undefined;
  }
  const [type, a, b, c] = frame;
  count('answers', String(type));
  if (type === 'CLOSED' && typeof b === 'string' && b !== '') count('refusals', `CLOSED ${reasonKey(b)}`);
  else if (type === 'NOTICE') count('refusals', `NOTICE ${reasonKey(String(a))}`);
  else if (type === 'OK' && b !== true) count('refusals', `OK false ${reasonKey(String(c))}`);
  return type === 'EOSE' ? String(a) : undefined;
}

function watch(socket: AbuseSocket, closeAtEose: boolean): void {
  sockets.add(socket);
  socket.onFrame = (frame, raw) => {
    const eose = onAnswer(frame, raw);
    if (eose !== undefined && closeAtEose) socket.send(['CLOSE', eose]);
  };
  socket.onClose = (code, reason) => {
    sockets.delete(socket);
    if (running) count('closes', `${code} ${reasonKey(reason)}`);
  };
}

/** One key sending `ratePerKey` REQ/COUNT frames a second on its own socket, reconnecting when closed. */
class KeyRunner {
  private socket: AbuseSocket | undefined;
  private connecting = false;
  private seq = 0;
  private readonly head: string;
  private readonly tail: string;

  constructor(private readonly signer: FastSigner) {
    this.head = `["${plan.verb}","`;
    this.tail = `",${filtersJson(plan)}]`;
  }

  async connect(): Promise<void> {
    try {
      this.socket = await openAuthed(plan.relayUrl, this.signer, plan.headers);
      watch(this.socket, plan.closeAtEose);
      count('connects', 'authenticated');
    } catch (err) {
      count('connects', reasonKey((err as Error).message));
      this.socket = undefined;
    }
  }

  start(): void {
    const timer = setInterval(() => this.tick(), 1000 / plan.ratePerKey);
    timers.push(timer);
  }

  private tick(): void {
    const s = this.socket;
    if (s === undefined || s.closed) return this.reconnect();
    if (s.bufferedAmount > MAX_BUFFERED_BYTES) return count('sent', 'skipped (attacker socket backed up)');
    s.send(`${this.head}a${this.seq++}${this.tail}`);
    count('sent', plan.verb);
  }

  private reconnect(): void {
    if (this.connecting) return;
    this.connecting = true;
    this.socket = undefined;
    void sleep(RECONNECT_MS)
      .then(() => (running ? this.connect() : undefined))
      .finally(() => (this.connecting = false));
  }
}

let runners: KeyRunner[] = [];
let signers: FastSigner[] = [];

async function inBatches<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function prepare(p: AttackPlan): Promise<void> {
  plan = p;
  if (p.kind === 'frames') {
    signers = Array.from({ length: p.keys }, () => fastSigner());
    runners = signers.map((s) => new KeyRunner(s));
    await inBatches(runners, 50, (r) => r.connect());
  } else if (p.kind === 'sockets') {
    signers = Array.from({ length: p.keys }, () => fastSigner());
  }
}

/** One pre-AUTH socket after another on one slot: open, send the held frames, wait to be closed, again. */
async function preauthSlot(frame: string): Promise<void> {
  while (running) {
    try {
      const socket = await AbuseSocket.open(plan.relayUrl, plan.headers);
      count('connects', 'opened');
      watch(socket, false);
      const closed = new Promise<void>((resolve) => {
        const previous = socket.onClose;
        socket.onClose = (code, reason) => {
          previous?.(code, reason);
          resolve();
        };
      });
      for (let i = 0; i < plan.frames; i++) socket.send(frame);
      count('sent', 'preauth frames', plan.frames);
      await closed;
    } catch (err) {
      count('connects', reasonKey((err as Error).message));
    }
    await sleep(RECONNECT_MS * (0.5 + Math.random()));
  }
}

/** Opens `plan.sockets` authenticated sockets (keys round-robin) and holds them. */
async function openSockets(): Promise<void> {
  const started = performance.now();
  const slots = Array.from({ length: plan.sockets }, (_, i) => i);
  await inBatches(slots, OPEN_CONCURRENCY, async (i) => {
    if (!running) return;
    try {
      const socket = await openAuthed(plan.relayUrl, signers[i % signers.length], plan.headers, 20_000);
      watch(socket, false);
      count('connects', 'authenticated');
    } catch (err) {
      count('connects', reasonKey((err as Error).message));
    }
  });
  count('timing', 'open_all_ms', Math.round(performance.now() - started));
}

function go(): void {
  running = true;
  if (plan.kind === 'frames') for (const r of runners) r.start();
  else if (plan.kind === 'preauth') {
    const frame = preauthFrame(plan.frameBytes);
    for (let i = 0; i < plan.sockets; i++) loops.push(preauthSlot(frame));
  } else loops.push(openSockets());
}

function stop(): void {
  running = false;
  for (const t of timers) clearInterval(t);
  for (const s of sockets) s.close();
  send({ type: 'stopped', tally, openSockets: sockets.size });
}

process.on('message', (m: AttackMessage) => {
  if (m.type === 'prepare') {
    prepare(m.plan).then(
      () => send({ type: 'ready' }),
      (err: Error) => send({ type: 'error', message: err.stack ?? err.message }),
    );
  } else if (m.type === 'go') {
    go();
    send({ type: 'started' });
  } else if (m.type === 'stop') {
    stop();
    setTimeout(() => process.exit(0), 200);
  }
});
