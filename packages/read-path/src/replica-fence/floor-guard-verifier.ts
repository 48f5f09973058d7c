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
  // Values are written into the statements as literals (they are ours: a UUID, hex, integers),
  // because a rejection is checked inside a DO block, which takes no parameters.
  const insert = (ageSecs: number, channelId: string | null) => {
    const id = randomBytes(32);
    const sql = `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
         values ('${communityId}'::uuid, ${bytea(id)}, ${bytea(randomBytes(32))}, clock_timestamp() - make_interval(secs => ${ageSecs}), 9, '[]', '', ${bytea(randomBytes(64))}, ${channelId === null ? 'null' : `'${channelId}'::uuid`})`;
    return { id, sql };
  };
  await mustReject(client, 'old channel-bearing insert', insert(oldSecs, channel).sql);
  const fresh = insert(0, channel);
  await mustSucceed(client, 'fresh channel-bearing insert', fresh.sql);
  await mustReject(
    client,
    'rewriting created_at below the floor',
    `update events set created_at = clock_timestamp() - make_interval(secs => ${oldSecs}) where community_id = '${communityId}'::uuid and id = ${bytea(fresh.id)}`,
  );
  const global = insert(oldSecs, null);
  await mustSucceed(client, 'old channel-NULL insert', global.sql);
  await mustReject(client, 'moving an old channel-NULL row into a channel', `update events set channel_id = '${channel}'::uuid where community_id = '${communityId}'::uuid and id = ${bytea(global.id)}`);
}

const bytea = (b: Buffer) => `'\\x${b.toString('hex')}'::bytea`;

/** Where a case's outcome is left for the verifier to read (a transaction-local setting). */
const CASE_OUTCOME = 'buzz.floor_guard_case';

/**
 * Runs `statement` inside a PL/pgSQL block that catches its error and leaves the SQLSTATE in a
 * transaction-local setting: a rejection caught there is not an ERROR in the server's log, so a
 * normal start leaves none (a SAVEPOINT would still log every expected rejection).
 */
async function mustReject(client: PoolClient, what: string, statement: string): Promise<void> {
  await client.query(
    `DO $case$ BEGIN ${statement}; PERFORM set_config('${CASE_OUTCOME}', 'accepted', true);
       EXCEPTION WHEN OTHERS THEN PERFORM set_config('${CASE_OUTCOME}', SQLSTATE || ' ' || SQLERRM, true); END $case$`,
  );
  const { rows } = await client.query<{ v: string }>(`select current_setting('${CASE_OUTCOME}') as v`);
  const outcome = rows[0]?.v ?? '';
  if (outcome === 'accepted') throw new FloorGuardError(`floor guard is inert: ${what} was accepted`);
  if (outcome.startsWith('23514 ')) return;
  throw new FloorGuardError(`floor guard verification failed unexpectedly (${what}): ${outcome}`);
}

async function mustSucceed(client: PoolClient, what: string, statement: string): Promise<void> {
  try {
    await client.query(statement);
  } catch (err) {
    throw new FloorGuardError(`floor guard verification failed unexpectedly (${what}): ${(err as Error).message}`);
  }
}
