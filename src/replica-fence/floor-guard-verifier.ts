/**
 * Boot gating of the fence probe (database.md §4.1): the floor guard must be installed on
 * `events` and every partition (catalog check) and actually reject forbidden writes on the
 * serving writer pool (behaviour check, in one transaction that is always rolled back).
 * Any failure keeps the fence closed; the relay keeps serving from the writer.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { PoolClient } from 'pg';
import { CREATED_AT_FLOOR_GUC, CREATED_AT_FLOOR_SECS } from '../database/constants.js';

export class FloorGuardError extends Error {
  override readonly name = 'FloorGuardError';
}

const TRIGGER = 'events_created_at_floor';
const FUNCTION = 'events_created_at_floor_guard';

/** Trigger type bits (pg_trigger.tgtype). */
const ROW = 1;
const BEFORE = 2;
const INSERT = 4;
const UPDATE = 16;
const INSTEAD = 64;

export async function verifyFloorGuardCatalog(client: PoolClient): Promise<void> {
  const { rows } = await client.query<{ rel: string; ok: boolean }>(
    `select t.relid::regclass::text as rel,
            exists (select 1 from pg_trigger g join pg_proc p on p.oid = g.tgfoid
                     where g.tgrelid = t.relid and g.tgname = $1 and p.proname = $2
                       and g.tgdeferrable and g.tginitdeferred
                       and (g.tgtype & $3) = $3 and (g.tgtype & $4) = 0 and (g.tgtype & $5) = 0
                       and (g.tgtype & $6) = $6 and (g.tgtype & $7) = $7) as ok
       from pg_partition_tree('events'::regclass) t`,
    [TRIGGER, FUNCTION, ROW, BEFORE, INSTEAD, INSERT, UPDATE],
  );
  const missing = rows.filter((r) => !r.ok).map((r) => r.rel);
  if (rows.length === 0) missing.push('events');
  if (missing.length > 0) {
    throw new FloorGuardError(`floor guard trigger ${TRIGGER} missing or mis-shaped on: ${missing.join(', ')} (replica fence must stay closed)`);
  }
}

/** Runs the behaviour check on a serving writer connection; always rolls back. */
export async function verifyFloorGuardBehavior(client: PoolClient): Promise<void> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ v: string | null }>('select current_setting($1, true) as v', [CREATED_AT_FLOOR_GUC]);
    if (rows[0]?.v !== String(CREATED_AT_FLOOR_SECS)) {
      throw new FloorGuardError(`writer pool is not armed: ${CREATED_AT_FLOOR_GUC}=${JSON.stringify(rows[0]?.v)}, expected ${CREATED_AT_FLOOR_SECS}`);
    }
    await client.query('SET CONSTRAINTS ALL IMMEDIATE');
    const community = await client.query<{ id: string }>(`insert into communities (host) values ($1) returning id`, [
      `floor-guard-selftest-${randomBytes(6).toString('hex')}.invalid`,
    ]);
    await runCases(client, community.rows[0].id);
  } finally {
    await client.query('ROLLBACK');
  }
}

async function runCases(client: PoolClient, communityId: string): Promise<void> {
  const channel = randomUUID();
  const oldSecs = CREATED_AT_FLOOR_SECS + 60;
  const insert = (ageSecs: number, channelId: string | null) => {
    const id = randomBytes(32);
    const run = () =>
      client.query(
        `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
         values ($1, $2, $3, clock_timestamp() - make_interval(secs => $4), 9, '[]', '', $5, $6)`,
        [communityId, id, randomBytes(32), ageSecs, randomBytes(64), channelId],
      );
    return { id, run };
  };
  await mustReject(client, 'old channel-bearing insert', insert(oldSecs, channel).run);
  const fresh = insert(0, channel);
  await mustSucceed(client, 'fresh channel-bearing insert', fresh.run);
  await mustReject(client, 'rewriting created_at below the floor', () =>
    client.query(`update events set created_at = clock_timestamp() - make_interval(secs => $3) where community_id = $1 and id = $2`, [
      communityId,
      fresh.id,
      oldSecs,
    ]),
  );
  const global = insert(oldSecs, null);
  await mustSucceed(client, 'old channel-NULL insert', global.run);
  await mustReject(client, 'moving an old channel-NULL row into a channel', () =>
    client.query(`update events set channel_id = $3 where community_id = $1 and id = $2`, [communityId, global.id, channel]),
  );
}

async function mustReject(client: PoolClient, what: string, run: () => Promise<unknown>): Promise<void> {
  await client.query('SAVEPOINT floor_case');
  try {
    await run();
  } catch (err) {
    await client.query('ROLLBACK TO SAVEPOINT floor_case');
    const code = (err as { code?: string }).code;
    if (code === '23514') return;
    throw new FloorGuardError(`floor guard verification failed unexpectedly (${what}): ${code ?? ''} ${(err as Error).message}`);
  }
  throw new FloorGuardError(`floor guard is inert: ${what} was accepted`);
}

async function mustSucceed(client: PoolClient, what: string, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (err) {
    throw new FloorGuardError(`floor guard verification failed unexpectedly (${what}): ${(err as Error).message}`);
  }
}
