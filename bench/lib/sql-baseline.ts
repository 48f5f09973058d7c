/**
 * The same-run baselines: plain `pg` clients, one per simulated connection, each running its own
 * list of jobs strictly one after another (one statement in flight per connection, autocommit).
 * Connections are opened before the clock starts, as the relay's pool is warm too.
 */
import { Client } from 'pg';
import { secondsSince } from './bench-env.js';

export interface SqlRunResult {
  seconds: number;
  latenciesMs: number[];
}

export async function runSqlClients<T>(url: string, jobsPerClient: readonly T[][], run: (client: Client, job: T) => Promise<unknown>): Promise<SqlRunResult> {
  const clients = jobsPerClient.map(() => new Client({ connectionString: url }));
  try {
    await Promise.all(clients.map((c) => c.connect()));
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
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
}

/** Deals `items` round-robin into `n` lists (item i goes to list i % n). */
export function dealRoundRobin<T>(items: readonly T[], n: number): T[][] {
  const lists: T[][] = Array.from({ length: n }, () => []);
  items.forEach((item, i) => lists[i % n].push(item));
  return lists;
}
