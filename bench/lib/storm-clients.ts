/**
 * The storm bench's clients run in a child process (lib/storm-clients.child.ts), not on the
 * bench's own threads: its CPU time is then read by itself, and the process can run at a lower
 * CPU priority (`nice`) than the relay and the publisher. On a small machine the load generator
 * competes with the relay for the cores; in production a relay's clients run elsewhere. With
 * `nice` > 0, whenever both want a core the relay (and Postgres, and the publisher whose `OK`
 * latency is measured, which stays in the bench's process at normal priority) get it first.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StormOutcome } from './storm-client.js';

export interface StormClientsOptions {
  relayUrl: string;
  clients: number;
  auth: boolean;
  filter: object;
  maxRetries: number;
  backoffBaseMs: number;
  deadlineMs: number;
  /** Write a CPU profile of the client process over the storm into this directory. */
  cpuProfileDir?: string;
}

export type StormClientsMessage = { type: 'prepare'; options: StormClientsOptions } | { type: 'go' } | { type: 'close' };

export type StormClientsReply =
  | { type: 'ready' }
  | { type: 'outcomes'; outcomes: StormOutcome[]; startedAtAbs: number; endedAtAbs: number; cpuSeconds: number; cpuProfile?: string }
  | { type: 'error'; message: string };

export interface StormClientsRun {
  outcomes: StormOutcome[];
  /** On the absolute clock (performance.timeOrigin + performance.now()). */
  startedAtAbs: number;
  endedAtAbs: number;
  /** The client process's CPU time over the storm. */
  cpuSeconds: number;
  cpuProfile?: string;
}

export interface StormClients {
  readonly pid: number;
  /** The nice value the client process runs at. */
  readonly nice: number;
  storm(): Promise<StormClientsRun>;
  /** Closes every socket and ends the process. */
  close(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('./storm-clients.child.js', import.meta.url));

export async function startStormClients(options: StormClientsOptions, nice: number): Promise<StormClients> {
  // `nice` execs node, so every thread of the client process (V8's and libuv's too) runs at that priority.
  const child: ChildProcess =
    nice === 0 ? fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }) : fork(CHILD, [], { execPath: 'nice', execArgv: ['-n', String(nice), process.execPath], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const next = <T extends StormClientsReply['type']>(type: T) =>
    new Promise<Extract<StormClientsReply, { type: T }>>((resolve, reject) => {
      const onMessage = (m: StormClientsReply) => {
        if (m.type === 'error') return done(() => reject(new Error(`storm clients: ${m.message}`)));
        if (m.type === type) done(() => resolve(m as Extract<StormClientsReply, { type: T }>));
      };
      const onExit = (code: number | null) => done(() => reject(new Error(`storm clients exited with ${code}`)));
      const done = (then: () => void) => {
        child.off('message', onMessage);
        child.off('exit', onExit);
        then();
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const send = (m: StormClientsMessage) => child.send(m);
  const ready = next('ready');
  send({ type: 'prepare', options });
  await ready;
  return {
    pid: child.pid ?? 0,
    nice,
    storm: async () => {
      const outcomes = next('outcomes');
      send({ type: 'go' });
      const { type: _type, ...run } = await outcomes;
      return run;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => {
          process.off('exit', killOnExit);
          resolve();
        });
        send({ type: 'close' });
      }),
  };
}
