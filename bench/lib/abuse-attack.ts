/**
 * Starts the abuse bench's attacker process (lib/abuse-attack.child.ts), optionally under `nice`
 * so that on a small machine the relay and the victim get the cores first, as when the attackers
 * are elsewhere.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AttackPlan } from './abuse-scenarios.js';

/** category → key → count: what the attackers sent and what came back (refusals by reason among them). */
export type AttackTally = Record<string, Record<string, number>>;

export type AttackMessage = { type: 'prepare'; plan: AttackPlan } | { type: 'go' } | { type: 'stop' };
export type AttackReply =
  | { type: 'ready' }
  | { type: 'started' }
  | { type: 'stopped'; tally: AttackTally; openSockets: number }
  | { type: 'error'; message: string };

export interface Attacker {
  readonly pid: number;
  go(): Promise<void>;
  /** Stops the attack and ends the process; the tally of the whole attack. */
  stop(): Promise<{ tally: AttackTally; openSockets: number }>;
  kill(): void;
}

const CHILD = fileURLToPath(new URL('./abuse-attack.child.js', import.meta.url));

export async function startAttacker(plan: AttackPlan, nice: number): Promise<Attacker> {
  const stdio: ['ignore', 'inherit', 'inherit', 'ipc'] = ['ignore', 'inherit', 'inherit', 'ipc'];
  const child: ChildProcess = nice === 0 ? fork(CHILD, [], { stdio }) : fork(CHILD, [], { execPath: 'nice', execArgv: ['-n', String(nice), process.execPath], stdio });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const next = <T extends AttackReply['type']>(type: T) =>
    new Promise<Extract<AttackReply, { type: T }>>((resolve, reject) => {
      const onMessage = (m: AttackReply) => {
        if (m.type === 'error') return done(() => reject(new Error(`attacker: ${m.message}`)));
        if (m.type === type) done(() => resolve(m as Extract<AttackReply, { type: T }>));
      };
      const onExit = (code: number | null) => done(() => reject(new Error(`attacker exited with ${code}`)));
      const done = (then: () => void) => {
        child.off('message', onMessage);
        child.off('exit', onExit);
        then();
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const send = (m: AttackMessage) => child.send(m);
  const ready = next('ready');
  send({ type: 'prepare', plan });
  await ready;
  return {
    pid: child.pid ?? 0,
    go: async () => {
      const started = next('started');
      send({ type: 'go' });
      await started;
    },
    stop: async () => {
      const stopped = next('stopped');
      send({ type: 'stop' });
      const { tally, openSockets } = await stopped;
      process.off('exit', kill);
      return { tally, openSockets };
    },
    kill,
  };
}
