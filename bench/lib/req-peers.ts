/**
 * The REQ bench's peers (`--peers nostream`): issue 32 asks for this relay's closed-loop REQ rate
 * against the best peer's in the same run. A peer gets the same signed seed, published over the
 * same number of connections, then the same REQs (the same filters, connections and warm-up),
 * measured by the same loop as the relay. nostream speaks no NIP-42 and has no replica (as the
 * issue measured it), so its connections do not authenticate and it reads its writer.
 *
 * nostream takes `#h` as any single-letter tag, so the channel shape is its tag query; what it
 * cannot be asked is that a page equals the relay's (it breaks `created_at` ties its own way),
 * so a peer's REQ is checked for `EOSE` after `limit` events only. nostream refuses a REQ that
 * reuses an open subscription's id, so each REQ to a peer is followed by a CLOSE (untimed).
 */
import type { Event as NostrEvent } from 'nostr-tools/pure';
import { BenchConnection, mergePublishResults, toPublishItems } from './bench-connection.js';
import { logLine, quietPool, round, secondsSince, type BenchEnv } from './bench-env.js';
import { nostreamDir, startNostreamEnv } from './nostream.js';
import { dealRoundRobin } from './sql-baseline.js';

export const PEERS = ['nostream'] as const;
export type PeerName = (typeof PEERS)[number];

export interface Peer {
  readonly name: PeerName;
  readonly env: BenchEnv;
  readonly conns: readonly BenchConnection[];
}

/** The peers named by `--peers`, or why one cannot run (then it is skipped, as the storm bench does). */
export function peersToRun(list: string): PeerName[] {
  const names = list.split(',').filter(Boolean);
  const unknown = names.filter((n) => !(PEERS as readonly string[]).includes(n));
  if (unknown.length > 0) throw new Error(`--peers: ${unknown.join(', ')} is not one of ${PEERS.join(', ')}`);
  return (names as PeerName[]).filter((name) => {
    const found = checkout(name);
    if ('missing' in found) logLine(`peer ${name} skipped: ${found.missing}`);
    return !('missing' in found);
  });
}

function checkout(name: PeerName): { dir: string } | { missing: string } {
  switch (name) {
    case 'nostream':
      return nostreamDir();
  }
}

/** Starts the peer on a fresh Postgres pair and publishes `events` to it over `connections` connections. */
export async function startPeer(name: PeerName, events: readonly NostrEvent[], connections: number, window: number): Promise<Peer> {
  const found = checkout(name);
  if ('missing' in found) throw new Error(found.missing);
  const env = await startNostreamEnv(found.dir);
  try {
    const conns = await Promise.all(Array.from({ length: connections }, () => BenchConnection.openUnauthenticated(env.relayUrl)));
    const start = process.hrtime.bigint();
    const perConnection = dealRoundRobin(events, connections).map(toPublishItems);
    const result = mergePublishResults(await Promise.all(conns.map((c, i) => c.publishWindowed(perConnection[i], window))));
    if (result.accepted !== events.length) throw new Error(`${name} seeding: ${result.accepted}/${events.length} accepted: ${JSON.stringify(Object.fromEntries(result.reasons))}`);
    // As the relay's seed is vacuumed before its runs (statistics fresh, no autovacuum mid-run).
    const pool = quietPool(env.writerUrl, 1);
    await pool.query('vacuum (analyze)').finally(() => pool.end());
    logLine(`seeded ${result.accepted} events through ${name} in ${round(secondsSince(start), 1)} s`);
    return { name, env, conns };
  } catch (err) {
    logLine(`${name} output:\n${env.relayOutput()}`);
    await env.stop();
    throw err;
  }
}

export async function stopPeer(peer: Peer): Promise<void> {
  peer.conns.forEach((c) => c.close());
  await peer.env.stop();
}
