/**
 * The same-run baselines: plain `pg` clients, one per simulated connection, each running its own
 * list of jobs strictly one after another (one statement in flight per connection, autocommit).
 * Connections are opened before the clock starts, as the relay's pool is warm too.
 *
 * They are the relay's CallbackQueryClient, a `pg.Client` that only changes how the promise form
 * hands pg its callback. With pg's own promise form, the bench process promoted a large share of
 * every result set (V8 pretenuring, see database/callback-query-client.ts). Its scavenges took
 * 13–35 ms, and the baseline's latencies carried them.
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { CallbackQueryClient } from '@buzz-relay/read-path/internal';
import { secondsSince } from './bench-env.js';

export interface SqlRunResult {
  seconds: number;
  latenciesMs: number[];
}

export async function runSqlClients<T>(url: string, jobsPerClient: readonly T[][], run: (client: Client, job: T) => Promise<unknown>): Promise<SqlRunResult> {
  const clients = await connectClients(url, jobsPerClient.length);
  try {
    const latenciesMs: number[] = [];
    const start = process.hrtime.bigint();
    await Promise.all(
      clients.map(async (client, i) => {
        for (const job of jobsPerClient[i]) {
          const t0 = process.hrtime.bigint();
          await run(client, job);
          latenciesMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    return { seconds: secondsSince(start), latenciesMs };
  } finally {
    await closeClients(clients);
  }
}

/** Backend pid of each open baseline client, so that closing can wait for the backend to be gone. */
const backendPids = new WeakMap<Client, number>();

/** `n` connected clients (the Postgres server is local: its backends are visible in /proc). */
export async function connectClients(url: string, n: number): Promise<Client[]> {
  const clients: Client[] = Array.from({ length: n }, () => new CallbackQueryClient({ connectionString: url }));
  await Promise.all(
    clients.map(async (c) => {
      await c.connect();
      const { rows } = await c.query<{ pid: number }>('select pg_backend_pid() as pid');
      backendPids.set(c, rows[0].pid);
    }),
  );
  return clients;
}

/**
 * Ends the clients and waits (at most 5 s) until their backends have exited and been reaped. A
 * backend caught exiting by the next window's CPU sample would be missed as a live process and
 * then counted whole when its postmaster reaps it: that window's Postgres CPU would absorb all
 * the CPU the backend ever used.
 */
export async function closeClients(clients: readonly Client[]): Promise<void> {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  const pids = clients.map((c) => backendPids.get(c)).filter((pid) => pid !== undefined);
  const deadline = Date.now() + 5000;
  while (pids.some((pid) => existsSync(`/proc/${pid}`)) && Date.now() < deadline) await sleep(5);
}

/** Deals `items` round-robin into `n` lists (item i goes to list i % n). */
export function dealRoundRobin<T>(items: readonly T[], n: number): T[][] {
  const lists: T[][] = Array.from({ length: n }, () => []);
  items.forEach((item, i) => lists[i % n].push(item));
  return lists;
}
