/**
 * Seed 002's long-thread table at this machine's scale (issue 6): one 188-message thread (root +
 * 187 replies, some reactions, one deletion) posted through the built relay, plus `--background`
 * events (default 1M) in the same community loaded with plain SQL, spread over every partition.
 *
 * For thread-reply limits 10/50/100/200 (ids = root + the first `limit` replies; 188 at 200) and
 * for the GIN pending list clean (after VACUUM) and dirty (refilled until every partition's tags
 * index holds `--pending-pages` pending pages; `pgstatginindex` recorded before and after each
 * matrix), three runs each, in one run:
 *
 * - SQL wall time of the first aux hop (kinds 5/7/9005/40003, scope = the thread's channel plus
 *   channel-less rows, page size 1000) in three forms, the id set bound as ONE array parameter:
 *   `or`     the old form, one `tags @> ($n)[k]` term per id joined with OR, inside the ordered
 *            page query (kept here only, for comparison);
 *   `fenced` seed 002's form: MATERIALIZED fence + `tags @> any($n::jsonb[])` (GIN);
 *   `refs`   the shipped form, captured from BridgeReadsRepository.referencing(): event_refs
 *            btree probes, then events primary-key probes, fenced;
 *   every completed cell must return the same id set;
 * - end-to-end time through the bridge: `POST /query` thread replies with include_aux (the built
 *   relay runs the `refs` form), and without include_aux as the floor.
 *
 * Then the ingest cost of event_refs: batches of 64 e-tagged events written with the writer's
 * statements (EventWriteRepository; one transaction per batch, as grouped commits do), with and
 * without the event_refs insert, interleaved, plus the alternative of `fastupdate = off` on the
 * GIN tags index (no pending list; every insert updates the index in place).
 *
 *   npm run build && node dist/bench/long-thread.bench.js [--background 1000000] [--runs 3]
 *       [--limits 10,50,100,200] [--pending-pages 380] [--or-timeout-ms 30000] [--ingest-batches 100]
 *
 * JSON lines on stdout (one per cell, one for ingest, one summary), the table on stderr.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import type { Pool, PoolClient } from 'pg';
import { generateSecretKey, getPublicKey, finalizeEvent, type Event as NostrEvent } from 'nostr-tools/pure';
import { fillEventRefs } from '@buzz-relay/read-path/internal';
import { AUX_KINDS } from '../src/bridge/bridge-params.js';
import { BridgeReadsRepository } from '../src/bridge/bridge-reads.repository.js';
import { DB } from '@buzz-relay/read-path';
import { EventWriteRepository } from '../src/events/event-write.repository.js';
import { ReadScope } from '../src/channels/read-scope.js';
import { StoredEventInput } from '../src/events/stored-event.js';
import { BenchConnection, toPublishItems } from './lib/bench-connection.js';
import { BenchEnv, logLine, quietPool, round, startBenchEnv, summarize, runBench } from './lib/bench-env.js';

const { values: args } = parseArgs({
  options: {
    background: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    limits: { type: 'string', default: '10,50,100,200' },
    reactions: { type: 'string', default: '20' },
    'pending-pages': { type: 'string', default: '380' },
    'or-timeout-ms': { type: 'string', default: '30000' },
    'ingest-batches': { type: 'string', default: '100' },
  },
});
const BACKGROUND = Number(args.background);
const RUNS = Number(args.runs);
const LIMITS = args.limits.split(',').map(Number);
const REACTIONS = Number(args.reactions);
const PENDING_TARGET = Number(args['pending-pages']);
const OR_TIMEOUT_MS = Number(args['or-timeout-ms']);
const INGEST_BATCHES = Number(args['ingest-batches']);
const REPLIES = 187;
const LOAD_CHUNK = 100_000;
const FILLER_CHUNK = 2_000;
const INGEST_BATCH = 64;
const BACKGROUND_CHANNELS = 8;
const AUX_PAGE = 1000;

type Form = 'or' | 'fenced' | 'refs';
const FORMS: readonly Form[] = ['or', 'fenced', 'refs'];
type State = 'clean' | 'dirty';

interface Thread {
  author: string;
  channel: string;
  root: string;
  /** Reply ids in thread-page order (created_at asc, id asc). */
  replies: string[];
}

interface Cell {
  state: State;
  limit: number;
  ids: number;
  form: Form | 'e2e' | 'e2e_no_aux';
  ms: Array<number | 'timeout'>;
  rows: number | undefined;
}

const httpBase = (env: BenchEnv) => env.relayUrl.replace(/^ws/, 'http');
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

// ---------------------------------------------------------------------------------------------
// Data

async function communityOf(pool: Pool, host: string): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `select coalesce((select id from communities where host = $1), (select community_id from community_host_aliases where host = $1)) as id`,
    [host],
  );
  if (!rows[0]?.id) throw new Error(`no community for ${host}`);
  return rows[0].id;
}

async function newCommunity(pool: Pool, host: string): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(`insert into communities (host, name) values ($1, $1) returning id`, [host]);
  return rows[0].id;
}

/** Channel, root, replies, reactions and one deletion, through the relay's WebSocket ingest. */
async function postThread(env: BenchEnv): Promise<Thread> {
  const sk = generateSecretKey();
  const author = getPublicKey(sk);
  const conn = await BenchConnection.open(env.relayUrl, sk);
  const now = Math.floor(Date.now() / 1000);
  const sign = (kind: number, tags: string[][], content: string, at = now) => finalizeEvent({ kind, created_at: at, tags, content }, sk);
  const publish = async (events: NostrEvent[], what: string) => {
    const res = await conn.publishWindowed(toPublishItems(events), 16);
    if (res.accepted !== events.length) throw new Error(`${what}: ${res.accepted}/${events.length} accepted: ${JSON.stringify([...res.reasons])}`);
  };
  try {
    const channel = randomUUID();
    await publish([sign(9007, [['h', channel], ['name', 'long-thread-bench'], ['visibility', 'open'], ['channel_type', 'stream']], '')], 'channel');
    const root = sign(9, [['h', channel]], `long thread root (${REPLIES} replies)`, now - 1);
    await publish([root], 'root');
    const replies = Array.from({ length: REPLIES }, (_, i) => sign(9, [['h', channel], ['e', root.id, '', 'root'], ['p', author]], `reply ${i + 1}`));
    await publish(replies, 'replies');
    const ordered = replies.map((r) => r.id).sort();
    const reactions = Array.from({ length: REACTIONS }, (_, i) => sign(7, [['h', channel], ['e', ordered[(i * 7) % ordered.length]], ['p', author]], '👍'));
    await publish(reactions, 'reactions');
    await publish([sign(5, [['e', reactions[0].id]], 'undo')], 'deletion');
    return { author, channel, root: root.id, replies: ordered };
  } finally {
    conn.close();
  }
}

/**
 * BACKGROUND events in the thread's community, created_at spread from 2025-06 to now so every
 * partition holds some: messages, replies and reactions in BACKGROUND_CHANNELS channels, the first
 * of which is the thread's own (a long thread in a busy channel), about 30% of them `e`-tagged to
 * earlier background events, plus 2% channel-less deletions; a `p` tag on some. Their event_refs
 * rows come from migration 0016's SQL derivation.
 */
async function loadBackground(pool: Pool, kysely: Kysely<DB>, communityId: string, channels: string[]): Promise<void> {
  const start = process.hrtime.bigint();
  for (let from = 1; from <= BACKGROUND; from += LOAD_CHUNK) {
    const to = Math.min(BACKGROUND, from + LOAD_CHUNK - 1);
    await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig, channel_id)
       select $1::uuid, sha256(('bg' || g)::bytea), sha256(('author' || (g % 400))::bytea),
              timestamptz '2025-06-01 00:00:00+00' + (g::float8 / $4::int) * (now() - interval '1 hour' - timestamptz '2025-06-01 00:00:00+00'),
              case when ch is null then 5 when g % 10 = 8 then 7 else 9 end,
              case when ch is null then '[]'::jsonb else jsonb_build_array(jsonb_build_array('h', ch::text)) end
                || case when ch is null or g % 10 in (6, 7, 8)
                        then jsonb_build_array(jsonb_build_array('e', encode(sha256(('bg' || greatest(1, g - 1 - g % 13))::bytea), 'hex'), '', 'reply'))
                        else '[]'::jsonb end
                || case when g % 10 in (1, 7) then jsonb_build_array(jsonb_build_array('p', encode(sha256(('author' || (g % 97))::bytea), 'hex')))
                        else '[]'::jsonb end,
              'background message ' || g, sha512(('sig' || g)::bytea), ch
         from generate_series($2::int, $3::int) g
        cross join lateral (select case when g % 50 = 0 then null else ($5::uuid[])[1 + g % ${BACKGROUND_CHANNELS}] end as ch) c`,
      [communityId, from, to, BACKGROUND, channels],
    );
    logLine(`background: ${to}/${BACKGROUND} rows (${round(ms(start) / 1000, 1)} s)`);
  }
  const refs = process.hrtime.bigint();
  const n = await fillEventRefs(kysely, communityId);
  logLine(`background: ${n} event_refs rows derived in ${round(ms(refs) / 1000, 1)} s`);
}

async function partitions(pool: Pool): Promise<Array<{ name: string; index: string; at: string }>> {
  const { rows } = await pool.query<{ name: string; index: string; bound: string }>(
    `select c.relname as name, ic.relname as index, pg_get_expr(c.relpartbound, c.oid) as bound
       from pg_inherits i join pg_class c on c.oid = i.inhrelid
       join pg_inherits ii on ii.inhparent = 'idx_events_tags_gin'::regclass
       join pg_index x on x.indexrelid = ii.inhrelid and x.indrelid = c.oid
       join pg_class ic on ic.oid = x.indexrelid
      where i.inhparent = 'events'::regclass order by 1`,
  );
  return rows.map((r) => {
    const m = /FROM \((?:'([^']+)'|MINVALUE)\) TO \((?:'([^']+)'|MAXVALUE)\)/.exec(r.bound);
    if (!m) throw new Error(`unexpected partition bound ${r.bound}`);
    // One instant inside the partition: an hour after its lower bound, or an hour before its upper one.
    const at = m[1] ? new Date(Date.parse(m[1]) + 3_600_000).toISOString() : new Date(Date.parse(m[2]) - 3_600_000).toISOString();
    return { name: r.name, index: r.index, at };
  });
}

/** Pending pages of each partition's tags GIN index (pgstatginindex). */
async function pendingPages(pool: Pool): Promise<number[]> {
  const { rows } = await pool.query<{ pages: string }>(
    `select (pgstatginindex(i.inhrelid)).pending_pages as pages from pg_inherits i where i.inhparent = 'idx_events_tags_gin'::regclass order by i.inhrelid`,
  );
  return rows.map((r) => Number(r.pages));
}

function pagesSummary(pages: number[]): { min: number; max: number; sum: number; partitions: number } {
  return { min: Math.min(...pages), max: Math.max(...pages), sum: pages.reduce((a, b) => a + b, 0), partitions: pages.length };
}

/**
 * Dirty: rows of a filler community (e-tagged like ingest, refs included) inserted into every
 * partition until its tags index holds PENDING_TARGET pending pages. The filler community keeps
 * the thread's results identical in both states; the pending list is per index, so every GIN
 * lookup of the thread's community still scans it.
 */
async function refill(pool: Pool, kysely: Kysely<DB>, filler: string, seq: { next: number }): Promise<void> {
  for (const part of await partitions(pool)) {
    for (let guard = 0; guard < 200; guard++) {
      const { rows } = await pool.query<{ pages: string }>(`select (pgstatginindex($1::regclass)).pending_pages as pages`, [part.index]);
      if (Number(rows[0].pages) >= PENDING_TARGET) break;
      const from = seq.next;
      seq.next += FILLER_CHUNK;
      await pool.query(
        `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
         select $1::uuid, sha256(('fill' || g)::bytea), sha256(('filler' || (g % 50))::bytea), $2::timestamptz + (g % 1000) * interval '1 second', 7,
                jsonb_build_array(jsonb_build_array('e', encode(sha256(('fill' || (g - 1))::bytea), 'hex')),
                                  jsonb_build_array('p', encode(sha256(('filler' || (g % 50))::bytea), 'hex'))),
                '+', sha512(('sig' || g)::bytea)
           from generate_series($3::int, $4::int) g`,
        [filler, part.at, from, from + FILLER_CHUNK - 1],
      );
    }
  }
  await fillEventRefs(kysely, filler);
}

// ---------------------------------------------------------------------------------------------
// The three SQL forms of the first aux hop

const COLUMNS = `e.id, e.pubkey, extract(epoch from e.created_at)::bigint as created_at, e.kind, e.tags, e.content, e.sig`;

function orForm(scope: ReadScope, ids: readonly string[]): CompiledQuery {
  const terms = ids.map((_, k) => `e.tags @> ($4::jsonb[])[${k + 1}]`).join(' or ');
  return CompiledQuery.raw(
    `select ${COLUMNS} from events e
      where e.community_id = $1::uuid and e.deleted_at is null and e.kind = any($2::int[])
        and (${terms}) and (e.channel_id is null or e.channel_id = any($3::uuid[]))
      order by e.created_at desc, e.id asc limit ${AUX_PAGE}`,
    [scope.communityId, AUX_KINDS, scope.channels, ids.map((id) => JSON.stringify([['e', id]]))],
  );
}

function fencedForm(scope: ReadScope, ids: readonly string[]): CompiledQuery {
  return CompiledQuery.raw(
    `with m as materialized (
       select e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig from events e
        where e.community_id = $1::uuid and e.deleted_at is null and e.kind = any($2::int[])
          and e.tags @> any($4::jsonb[]) and (e.channel_id is null or e.channel_id = any($3::uuid[])))
     select m.id, m.pubkey, extract(epoch from m.created_at)::bigint as created_at, m.kind, m.tags, m.content, m.sig
       from m order by m.created_at asc, m.id asc limit ${AUX_PAGE}`,
    [scope.communityId, AUX_KINDS, scope.channels, ids.map((id) => JSON.stringify([['e', id]]))],
  );
}

/** The shipped statement, exactly as the repository compiles it. */
async function refsForm(kysely: Kysely<DB>, captured: CompiledQuery[], scope: ReadScope, ids: readonly string[]): Promise<CompiledQuery> {
  captured.length = 0;
  await new BridgeReadsRepository().referencing(kysely, scope, ids, AUX_KINDS);
  const query = captured.find((q) => /from event_refs/i.test(q.sql));
  if (!query) throw new Error('referencing() sent no event_refs statement');
  return query;
}

/** Index names and scan types of a plan, for the record. */
async function planShape(client: PoolClient, q: CompiledQuery): Promise<string[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (format json) ${q.sql}`, [...q.parameters]);
  const nodes: PlanNode[] = [];
  const walk = (n: PlanNode) => (nodes.push(n), (n.Plans ?? []).forEach(walk));
  walk(rows[0]['QUERY PLAN'][0].Plan);
  const shapes = nodes
    .filter((n) => /Scan/.test(n['Node Type']) && n['Node Type'] !== 'CTE Scan')
    .map((n) => `${n['Node Type']}${n['Scan Direction'] === 'Backward' ? ' Backward' : ''} ${(n['Index Name'] ?? n['Relation Name'] ?? '').replace(/events_p\w+?_/, 'events_*_')}`);
  const counts = new Map<string, number>();
  for (const s of shapes) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n}× ${s}`);
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Scan Direction'?: string;
  Plans?: PlanNode[];
}

async function timeSql(client: PoolClient, q: CompiledQuery, cap: number): Promise<{ ms: number | 'timeout'; ids: string | undefined; rows: number }> {
  await client.query(`set statement_timeout = ${cap}`);
  const start = process.hrtime.bigint();
  try {
    const { rows } = await client.query<{ id: Buffer }>(q.sql, [...q.parameters]);
    return { ms: round(ms(start), 1), ids: rows.map((r) => r.id.toString('hex')).sort().join(','), rows: rows.length };
  } catch (err) {
    if ((err as { code?: string }).code === '57014') return { ms: 'timeout', ids: undefined, rows: 0 };
    throw err;
  }
}

async function timeBridge(env: BenchEnv, thread: Thread, limit: number, aux: boolean): Promise<{ ms: number; rows: number }> {
  const body = JSON.stringify([{ '#e': [thread.root], depth_limit: 1, include_aux: aux, limit }]);
  const start = process.hrtime.bigint();
  const res = await fetch(`${httpBase(env)}/query`, { method: 'POST', headers: { 'x-pubkey': thread.author, 'content-type': 'application/json' }, body });
  const events = (await res.json()) as unknown[];
  const took = round(ms(start), 1);
  if (res.status !== 200) throw new Error(`/query answered ${res.status}: ${JSON.stringify(events)}`);
  return { ms: took, rows: events.length };
}

/** One state's table: every limit, every form, RUNS runs each, plus the bridge end to end. */
async function matrix(env: BenchEnv, client: PoolClient, kysely: Kysely<DB>, captured: CompiledQuery[], scope: ReadScope, thread: Thread, state: State): Promise<Cell[]> {
  const cells: Cell[] = [];
  for (const limit of LIMITS) {
    const ids = [thread.root, ...thread.replies.slice(0, limit)];
    const queries: Record<Form, CompiledQuery> = { or: orForm(scope, ids), fenced: fencedForm(scope, ids), refs: await refsForm(kysely, captured, scope, ids) };
    const sets = new Map<string, Form[]>();
    for (const form of FORMS) {
      const cell: Cell = { state, limit, ids: ids.length, form, ms: [], rows: undefined };
      for (let run = 0; run < RUNS; run++) {
        const r = await timeSql(client, queries[form], form === 'or' ? OR_TIMEOUT_MS : 120_000);
        cell.ms.push(r.ms);
        if (r.ids === undefined) break; // a timed-out form is not run again in this cell
        cell.rows = r.rows;
        sets.set(r.ids, [...new Set([...(sets.get(r.ids) ?? []), form])]);
      }
      cells.push(cell);
      logLine(`${state} limit ${limit} (${ids.length} ids) ${form}: ${cell.ms.join(' / ')} ms, ${cell.rows ?? '-'} rows`);
    }
    if (sets.size > 1) throw new Error(`${state} limit ${limit}: the forms returned different rows: ${JSON.stringify([...sets.values()])}`);
    for (const aux of [true, false]) {
      const cell: Cell = { state, limit, ids: ids.length, form: aux ? 'e2e' : 'e2e_no_aux', ms: [], rows: undefined };
      for (let run = 0; run < RUNS; run++) {
        const r = await timeBridge(env, thread, limit, aux);
        cell.ms.push(r.ms);
        cell.rows = r.rows;
      }
      cells.push(cell);
      logLine(`${state} limit ${limit} ${cell.form}: ${cell.ms.join(' / ')} ms, ${cell.rows} events`);
    }
  }
  return cells;
}

/** Scan nodes and planning time (EXPLAIN (SUMMARY), not executed) of each form at the whole thread's ids. */
async function plans(client: PoolClient, kysely: Kysely<DB>, captured: CompiledQuery[], scope: ReadScope, thread: Thread) {
  const ids = [thread.root, ...thread.replies];
  const queries: Record<Form, CompiledQuery> = { or: orForm(scope, ids), fenced: fencedForm(scope, ids), refs: await refsForm(kysely, captured, scope, ids) };
  const out: Partial<Record<Form, { scans: string[]; planning_ms: number }>> = {};
  for (const form of FORMS) {
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ 'Planning Time': number }> }>(`explain (summary, format json) ${queries[form].sql}`, [...queries[form].parameters]);
    out[form] = { scans: await planShape(client, queries[form]), planning_ms: round(rows[0]['QUERY PLAN'][0]['Planning Time'], 1) };
  }
  return out as Record<Form, { scans: string[]; planning_ms: number }>;
}

// ---------------------------------------------------------------------------------------------
// Ingest cost

type IngestVariant = 'with_refs' | 'without_refs' | 'gin_fastupdate_off';

/** Batches of INGEST_BATCH e-tagged reactions/replies to background events, as grouped commits write them. */
function ingestBatch(seq: number, channel: string): StoredEventInput[] {
  return Array.from({ length: INGEST_BATCH }, (_, i) => {
    const n = seq * INGEST_BATCH + i;
    const target = (k: number) => Buffer.from(`${n}:${k}`.padEnd(32, '.')).toString('hex');
    const tags = [['h', channel], ['e', target(0), '', 'root'], ...(n % 3 === 0 ? [['e', target(1), '', 'reply']] : []), ['p', 'ab'.repeat(32)]];
    const id = Buffer.from(`ingest-${n}`.padEnd(32, '#')).toString('hex');
    return {
      event: { id, pubkey: 'cd'.repeat(32), created_at: Math.floor(Date.now() / 1000), kind: n % 2 ? 7 : 9, tags, content: `ingest ${n}`, sig: '00'.repeat(64) },
      channelId: channel,
      dTag: null,
      thread: null,
      mentions: ['ab'.repeat(32)],
    };
  });
}

/**
 * Interleaved batches with and without the event_refs insert, starting from empty pending lists;
 * then the flush of what they left in the pending lists (the GIN work fastupdate defers, which
 * some later insert or VACUUM pays), then the same batches with fastupdate = off, paying it inline.
 */
async function measureIngest(pool: Pool, kysely: Kysely<DB>, channel: string) {
  const repo = new EventWriteRepository();
  const communityId = await newCommunity(pool, 'ingest.bench');
  let seq = 0;
  const batch = async (refs: boolean) => {
    const items = ingestBatch(seq++, channel);
    const start = process.hrtime.bigint();
    await kysely.transaction().execute(async (tx) => {
      await repo.insertEvents(tx, communityId, items);
      await repo.insertMentions(tx, communityId, items);
      if (refs) await repo.insertRefs(tx, communityId, items);
    });
    return ms(start);
  };
  const samples: Record<IngestVariant, number[]> = { with_refs: [], without_refs: [], gin_fastupdate_off: [] };
  for (let i = 0; i < 4; i++) await batch(i % 2 === 0); // warm-up
  await cleanPendingLists(pool);
  for (let i = 0; i < INGEST_BATCHES; i++) {
    samples.with_refs.push(await batch(true));
    samples.without_refs.push(await batch(false));
  }
  const flushMs = await cleanPendingLists(pool);
  await setFastupdate(pool, false);
  for (let i = 0; i < INGEST_BATCHES; i++) samples.gin_fastupdate_off.push(await batch(false));
  await setFastupdate(pool, true);
  const variants = Object.fromEntries(
    Object.entries(samples).map(([variant, xs]) => {
      const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
      return [variant, { ...summarize(xs), mean: round(mean), events_per_s: round((INGEST_BATCH * 1000) / mean, 0) }];
    }),
  ) as Record<IngestVariant, ReturnType<typeof summarize> & { mean: number; events_per_s: number }>;
  // The deferred flush served both fastupdate=on variants equally: charge it per batch.
  return { ...variants, deferred_flush_ms: round(flushMs), deferred_flush_ms_per_batch: round(flushMs / (2 * INGEST_BATCHES), 3) };
}

/** Flushes every tags index's pending list into the index proper; returns the time it took. */
async function cleanPendingLists(pool: Pool): Promise<number> {
  const start = process.hrtime.bigint();
  await pool.query(`select gin_clean_pending_list(inhrelid) from pg_inherits where inhparent = 'idx_events_tags_gin'::regclass`);
  return ms(start);
}

async function setFastupdate(pool: Pool, on: boolean): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(`select inhrelid::regclass::text as name from pg_inherits where inhparent = 'idx_events_tags_gin'::regclass`);
  for (const r of rows) await pool.query(`alter index ${r.name} set (fastupdate = ${on ? 'on' : 'off'})`);
}

// ---------------------------------------------------------------------------------------------
// Report

const median = (xs: Array<number | 'timeout'>) => {
  const done = xs.filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
  return done.length === xs.length && done.length > 0 ? done[Math.floor(done.length / 2)] : Number.NaN;
};

function table(cells: Cell[]): string {
  const out = ['| state | form | ' + LIMITS.map((l) => `limit ${l}`).join(' | ') + ' |', '|---|---|' + LIMITS.map(() => '---|').join('')];
  for (const state of ['clean', 'dirty'] as const) {
    for (const form of [...FORMS, 'e2e', 'e2e_no_aux'] as const) {
      const row = LIMITS.map((l) => cells.find((c) => c.state === state && c.form === form && c.limit === l)?.ms.map((x) => (x === 'timeout' ? `>${OR_TIMEOUT_MS / 1000} s` : x)).join(' / ') ?? '');
      out.push(`| ${state} | ${form} | ${row.join(' | ')} |`);
    }
  }
  out.push('', '| state | ratio (medians) | ' + LIMITS.map((l) => `limit ${l}`).join(' | ') + ' |', '|---|---|' + LIMITS.map(() => '---|').join(''));
  for (const state of ['clean', 'dirty'] as const) {
    for (const [a, b] of [['or', 'refs'], ['fenced', 'refs']] as const) {
      const row = LIMITS.map((l) => {
        const x = median(cells.find((c) => c.state === state && c.form === a && c.limit === l)!.ms);
        const y = median(cells.find((c) => c.state === state && c.form === b && c.limit === l)!.ms);
        return Number.isNaN(x) ? `> ${round(OR_TIMEOUT_MS / y, 0)}×` : `${round(x / y, 1)}×`;
      });
      out.push(`| ${state} | ${a} / ${b} | ${row.join(' | ')} |`);
    }
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = process.hrtime.bigint();
  const env = await startBenchEnv();
  const pool = quietPool(env.writerUrl, 4);
  const captured: CompiledQuery[] = [];
  const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === 'query' && captured.push(e.query)) });
  const client = await pool.connect();
  try {
    await pool.query('create extension if not exists pgstattuple');
    const communityId = await communityOf(pool, 'localhost');
    const thread = await postThread(env);
    logLine(`thread ${thread.root.slice(0, 12)}… in channel ${thread.channel}: ${thread.replies.length} replies, ${REACTIONS} reactions, 1 deletion`);
    const channels = [thread.channel, ...Array.from({ length: BACKGROUND_CHANNELS - 1 }, () => randomUUID())];
    await loadBackground(pool, kysely, communityId, channels);
    // The dirty state must stay dirty: no autovacuum/autoanalyze may flush a pending list mid-matrix.
    for (const p of await partitions(pool)) await pool.query(`alter table ${p.name} set (autovacuum_enabled = off)`);
    await pool.query('alter table event_refs set (autovacuum_enabled = off)');
    const filler = await newCommunity(pool, 'filler.bench');
    const scope: ReadScope = { communityId, channels: [thread.channel], includeGlobal: true };
    const cells: Cell[] = [];
    const pending: Record<string, ReturnType<typeof pagesSummary>> = {};
    let shapes: Record<string, Awaited<ReturnType<typeof plans>>> = {};
    const seq = { next: 1 };
    await timeBridge(env, thread, 10, true); // warm-up: the relay's first bridge request is not part of any cell
    for (const state of ['clean', 'dirty'] as const) {
      const prep = process.hrtime.bigint();
      if (state === 'clean') await pool.query('vacuum analyze events'), await pool.query('vacuum analyze event_refs');
      else await refill(pool, kysely, filler, seq);
      logLine(`${state}: prepared in ${round(ms(prep) / 1000, 1)} s`);
      pending[`${state}_start`] = pagesSummary(await pendingPages(pool));
      shapes = { ...shapes, [state]: await plans(client, kysely, captured, scope, thread) };
      cells.push(...(await matrix(env, client, kysely, captured, scope, thread, state)));
      pending[`${state}_end`] = pagesSummary(await pendingPages(pool));
      logLine(`${state}: pending pages start ${JSON.stringify(pending[`${state}_start`])}, end ${JSON.stringify(pending[`${state}_end`])}`);
    }
    const ingest = await measureIngest(pool, kysely, thread.channel);
    const { rows: sizes } = await pool.query<{ postgres: string; events: string; refs: string; refs_size: string; gin_size: string }>(
      `select current_setting('server_version') as postgres, (select count(*) from events) as events, (select count(*) from event_refs) as refs,
              pg_size_pretty(pg_total_relation_size('event_refs')) as refs_size,
              pg_size_pretty((select sum(pg_relation_size(inhrelid)) from pg_inherits where inhparent = 'idx_events_tags_gin'::regclass)::bigint) as gin_size`,
    );
    for (const c of cells) console.log(JSON.stringify({ bench: 'long-thread', ...c }));
    const load = await import('node:os').then((os) => os.loadavg().map((x) => round(x, 2)));
    const onWithout = ingest.without_refs.mean + ingest.deferred_flush_ms_per_batch;
    const ratios = {
      refs_over_without: round(ingest.with_refs.mean / ingest.without_refs.mean, 3),
      refs_over_without_incl_flush: round((ingest.with_refs.mean + ingest.deferred_flush_ms_per_batch) / onWithout, 3),
      fastupdate_off_over_on_incl_flush: round(ingest.gin_fastupdate_off.mean / onWithout, 3),
    };
    console.log(JSON.stringify({ bench: 'long-thread-ingest', batch: INGEST_BATCH, batches: INGEST_BATCHES, ...ingest, ...ratios }));
    console.log(JSON.stringify({ bench: 'long-thread-summary', background: BACKGROUND, runs: RUNS, pending, plans: shapes, sizes: sizes[0], loadavg: load, seconds: round(ms(started) / 1000, 0) }));
    process.stderr.write(`\n${table(cells)}\n\n`);
    for (const [state, byForm] of Object.entries(shapes)) {
      process.stderr.write(`planning ms at ${thread.replies.length + 1} ids, ${state}: ${FORMS.map((f) => `${f} ${byForm[f].planning_ms}`).join(', ')}\n`);
    }
    process.stderr.write(
      `ingest, ${INGEST_BATCH}-event batches, mean ms/batch (events/s): with event_refs ${ingest.with_refs.mean} (${ingest.with_refs.events_per_s}/s), ` +
        `without ${ingest.without_refs.mean} (${ingest.without_refs.events_per_s}/s), deferred GIN flush +${ingest.deferred_flush_ms_per_batch} per batch, ` +
        `GIN fastupdate=off without event_refs ${ingest.gin_fastupdate_off.mean} (${ingest.gin_fastupdate_off.events_per_s}/s); ratios ${JSON.stringify(ratios)}\n`,
    );
    return 0;
  } catch (err) {
    logLine(`relay output:\n${env.relayOutput().slice(-4000)}`);
    throw err;
  } finally {
    client.release();
    await kysely.destroy();
    await env.stop();
  }
}

runBench(main);
