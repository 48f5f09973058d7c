/**
 * event_tags (migration 0018): NIP-01's tag index, kept by a statement trigger on `events`. Every
 * row inserted into `events`, by any statement, gets exactly the index rows of the rule: one per
 * distinct (letter, value) of its tags, the letter ASCII and neither `e` nor `h`, the value at most
 * 256 UTF-8 bytes. The migration's backfill gives the same rows, and pages walking the index still
 * answer for their own community and live rows only. A deleted event loses its rows here and in
 * event_refs (migration 0019), by any update that deletes it, and that migration removes the rows
 * of events deleted before it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { DB } from '../../packages/read-path/src/database/database.types.js';
import { INDEXED_TAG_VALUE_MAX_BYTES, tagIndexKey } from '../../src/events/event-read.queries.js';
import { EventReadRepository } from '../../src/events/event-read.repository.js';
import { communityWide } from '../../src/channels/read-scope.js';
import * as eventTags from '../../packages/read-path/migrations/0018_event_tags.js';
import { fillEventRefs } from '../../packages/read-path/migrations/0016_event_refs.js';
import * as pruneDeleted from '../../packages/read-path/migrations/0019_prune_deleted_events.js';
import { EventWriteRepository } from '../../src/events/event-write.repository.js';
import { eventually } from '../harness/eventually.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let pool: Pool;
let kysely: Kysely<DB>;
const communityId = randomUUID();
const otherCommunityId = randomUUID();
const refId = randomBytes(32).toString('hex');

beforeAll(async () => {
  db = await createTestDatabase();
  // Four: the migration test holds one connection in an open insert while the migration and its poll use others.
  pool = new Pool({ connectionString: db.writerUrl, max: 4 });
  pool.on('error', () => undefined);
  kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  for (const id of [communityId, otherCommunityId]) await pool.query(`insert into communities (id, host) values ($1, $2)`, [id, `tags-${id}.test`]);
}, 60_000);

afterAll(async () => {
  await kysely?.destroy();
  await db?.drop();
});

let serial = 0;
/** Inserts kind-1 events with these tag lists in one statement; returns their hex ids in order. */
async function insert(tagLists: string[][][], community = communityId, ageSecs = 0): Promise<string[]> {
  const ids = tagLists.map(() => (++serial).toString(16).padStart(64, '0'));
  await pool.query(
    `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
     select $1, decode(u.id, 'hex'), $2, date_trunc('second', now()) - make_interval(secs => $5), 1, u.tags, '', $3
       from unnest($4::text[], $6::jsonb[]) as u(id, tags)`,
    [community, randomBytes(32), randomBytes(64), ids, ageSecs, tagLists.map((t) => JSON.stringify(t))],
  );
  return ids;
}

/** The index rows of one event, as `name=value`, sorted. */
async function indexOf(id: string): Promise<string[]> {
  const { rows } = await pool.query<{ row: string }>(
    `select name || '=' || value as row from event_tags where event_id = decode($1, 'hex') order by 1`,
    [id],
  );
  return rows.map((r) => r.row);
}

const euro = (n: number) => '€'.repeat(n); // 3 UTF-8 bytes each

describe('event_tags: the trigger on events', () => {
  it('indexes single ASCII letters but e and h, string values up to 256 bytes, each pair once', async () => {
    const [id] = await insert([
      [
        ['t', 'nostr'],
        ['t', 'nostr'],
        ['T', 'Upper'],
        ['E', 'root-scope'],
        ['H', 'not-a-channel'],
        ['e', refId],
        ['h', 'channel'],
        ['tt', 'two letters'],
        ['1', 'digit'],
        ['é', 'accented'],
        ['p'],
        ['d', '', 'third element'],
        ['r', 'x'.repeat(INDEXED_TAG_VALUE_MAX_BYTES)],
        ['r', 'y'.repeat(INDEXED_TAG_VALUE_MAX_BYTES + 1)],
        ['s', `${euro(85)}a`],
        ['s', euro(86)],
      ],
    ]);
    expect(await indexOf(id)).toEqual(
      ['E=root-scope', 'H=not-a-channel', 'T=Upper', 'd=', `r=${'x'.repeat(256)}`, `s=${euro(85)}a`, 't=nostr'].sort(),
    );
  });

  it('indexes every row of a many-row statement, and nothing again for an insert that conflicts', async () => {
    const ids = await insert([[['t', 'a']], [['t', 'b'], ['k', '9']], []]);
    expect(await Promise.all(ids.map(indexOf))).toEqual([['t=a'], ['k=9', 't=b'], []]);
    // A repeated insert that conflicts inserts no row, so the trigger indexes nothing twice.
    const { rowCount } = await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
       select community_id, id, pubkey, created_at, kind, '[["t","changed"]]', content, sig from events where id = decode($1, 'hex')
       on conflict do nothing`,
      [ids[0]],
    );
    expect(rowCount).toBe(0);
    expect(await indexOf(ids[0])).toEqual(['t=a']);
  });

  it('copies the event columns a page needs from the row', async () => {
    const [id] = await insert([[['t', 'copied']]], communityId, 5);
    const { rows } = await pool.query(
      `select (t.community_id = e.community_id and t.event_created_at = e.created_at and t.event_kind = e.kind) as same
         from event_tags t join events e on e.id = t.event_id where t.event_id = decode($1, 'hex')`,
      [id],
    );
    expect(rows).toEqual([{ same: true }]);
  });
});

describe('event_tags: the migration', () => {
  it('its backfill gives the rows the trigger gave', async () => {
    await insert([[['t', 'backfilled'], ['q', refId]], [['g', 'u4pruyd']]]);
    const all = async () =>
      (await pool.query<{ row: string }>(`select concat_ws(' ', community_id, name, value, event_created_at, encode(event_id, 'hex'), event_kind) as row from event_tags order by 1`)).rows.map((r) => r.row);
    const before = await all();
    expect(before.length).toBeGreaterThan(10);
    await eventTags.down(kysely);
    const { rows } = await pool.query(`select to_regclass('event_tags') as t`);
    expect(rows).toEqual([{ t: null }]);
    await eventTags.up(kysely);
    expect(await all()).toEqual(before);
  });

  it('indexes an event committed after its backfill read the table and before the trigger existed', async () => {
    await eventTags.down(kysely);
    // An insert in flight when the migration starts: the backfill cannot see it, the trigger is
    // not there yet, and CREATE TRIGGER waits for it to commit.
    const writer = await pool.connect();
    try {
      await writer.query('begin');
      const id = (++serial).toString(16).padStart(64, '0');
      await writer.query(
        `insert into events (community_id, id, pubkey, created_at, kind, tags, content, sig)
         values ($1, decode($2, 'hex'), $3, date_trunc('second', now()), 1, '[["t","in-flight"]]', '', $4)`,
        [communityId, id, randomBytes(32), randomBytes(64)],
      );
      const migrating = eventTags.up(kysely);
      await eventually('CREATE TRIGGER waiting for the open insert', async () => {
        const { rows } = await pool.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%CREATE TRIGGER events_index_tags%'`);
        return rows.length > 0;
      });
      expect(await indexOf(id)).toEqual([]);
      await writer.query('commit');
      await migrating;
      expect(await indexOf(id)).toEqual(['t=in-flight']);
    } finally {
      writer.release();
    }
  });
});

describe('deleted events lose their event_tags and event_refs rows (migration 0019)', () => {
  /** The event_refs rows of one event: the ids it references, sorted. */
  const refsOf = async (id: string) =>
    (await pool.query<{ ref: string }>(`select encode(ref_id, 'hex') as ref from event_refs where event_id = decode($1, 'hex') order by 1`, [id])).rows.map((r) => r.ref);
  const otherRef = randomBytes(32).toString('hex');

  it('by any update that deletes them; other updates, other events and references to them stay', async () => {
    const [gone, kept, edited] = await insert([[['t', 'pruned'], ['p', 'x'], ['e', refId]], [['t', 'pruned'], ['e', refId]], [['t', 'pruned']]]);
    const [pointer] = await insert([[['e', gone]]]);
    await fillEventRefs(kysely, communityId);
    await pool.query(`update events set deleted_at = now() where id = decode($1, 'hex')`, [gone]);
    await pool.query(`update events set content = 'edited' where id = decode($1, 'hex')`, [edited]);
    expect(await Promise.all([gone, kept, edited].map(indexOf))).toEqual([[], ['t=pruned'], ['t=pruned']]);
    expect(await Promise.all([gone, kept, pointer].map(refsOf))).toEqual([[], [refId], [gone]]);
  });

  it('when a replaceable version is superseded through the write repository', async () => {
    const pubkey = randomBytes(32);
    const ids = [++serial, ++serial].map((n) => n.toString(16).padStart(64, '0'));
    await pool.query(
      `insert into events (community_id, id, pubkey, created_at, kind, d_tag, tags, content, sig)
       select $1, decode(u.id, 'hex'), $2, date_trunc('second', now()) - make_interval(secs => u.age), 39002, 'group', $3, '', $4
         from unnest($5::text[], $6::int[]) as u(id, age)`,
      [communityId, pubkey, JSON.stringify([['d', 'group'], ['p', 'member'], ['e', otherRef]]), randomBytes(64), ids, [10, 0]],
    );
    await fillEventRefs(kysely, communityId);
    const [older, newer] = ids;
    await new EventWriteRepository().supersedeVersions(kysely, communityId, pubkey.toString('hex'), 39002, 'group', newer);
    expect(await Promise.all([older, newer].map(indexOf))).toEqual([[], ['d=group', 'p=member']]);
    expect(await Promise.all([older, newer].map(refsOf))).toEqual([[], [otherRef]]);
  });

  it('deleted before the migration lose them to it; until then pages skip them', async () => {
    await pruneDeleted.down(kysely);
    try {
      const [stale, live] = await insert([[['t', 'stale'], ['e', otherRef]], [['t', 'stale'], ['e', otherRef]]]);
      await fillEventRefs(kysely, communityId);
      await pool.query(`update events set deleted_at = now() where id = decode($1, 'hex')`, [stale]);
      expect(await indexOf(stale)).toEqual(['t=stale']);
      expect(await refsOf(stale)).toEqual([otherRef]);
      const read = (tags: Record<string, string[]>) => new EventReadRepository().query(kysely, communityWide(communityId), { tags, extensions: {}, kinds: [1] }, 20);
      expect((await read({ t: ['stale'] })).map((e) => e.id)).toEqual([live]);
      expect((await read({ e: [otherRef] })).map((e) => e.id)).toEqual([live]);
      await pruneDeleted.up(kysely);
      expect(await Promise.all([stale, live].map(indexOf))).toEqual([[], ['t=stale']]);
      expect(await Promise.all([stale, live].map(refsOf))).toEqual([[], [otherRef]]);
    } finally {
      const { rows } = await pool.query(`select 1 from pg_trigger where tgname = 'events_prune_index_rows'`);
      if (rows.length === 0) await pruneDeleted.up(kysely);
    }
  });
});

describe('event_tags: pages that walk it', () => {
  const page = async (community: string, values: string[]) =>
    (await new EventReadRepository().query(kysely, communityWide(community), { tags: { t: values }, extensions: {}, kinds: [1] }, 20)).map((e) => e.id);

  it('answer for their own community and live rows only', async () => {
    expect(tagIndexKey({ tags: { t: ['shared'] }, extensions: {}, kinds: [1] })).toBe('t');
    const [mine, gone] = await insert([[['t', 'shared']], [['t', 'shared']]]);
    const [theirs] = await insert([[['t', 'shared']]], otherCommunityId);
    expect((await page(communityId, ['shared'])).sort()).toEqual([mine, gone].sort());
    await pool.query(`update events set deleted_at = now() where id = decode($1, 'hex')`, [gone]);
    expect(await page(communityId, ['shared'])).toEqual([mine]);
    expect(await page(otherCommunityId, ['shared'])).toEqual([theirs]);
  });

  it('are taken only for indexed names, at most 32 values, none too long, and no authors or ids', () => {
    const f = (tags: Record<string, string[]>, more = {}) => ({ tags, extensions: {}, ...more });
    expect(tagIndexKey(f({ h: ['x'], T: ['y'] }))).toBe('T');
    expect(tagIndexKey(f({ e: [refId] }))).toBeUndefined();
    expect(tagIndexKey(f({ h: ['x'] }))).toBeUndefined();
    expect(tagIndexKey(f({ topic: ['x'] }))).toBeUndefined();
    expect(tagIndexKey(f({ t: Array.from({ length: 32 }, (_, i) => `v${i}`) }))).toBe('t');
    expect(tagIndexKey(f({ t: Array.from({ length: 33 }, (_, i) => `v${i}`) }))).toBeUndefined();
    expect(tagIndexKey(f({ t: [euro(85)] }))).toBe('t');
    expect(tagIndexKey(f({ t: [euro(86)] }))).toBeUndefined();
    expect(tagIndexKey(f({ t: ['x'] }, { authors: [refId] }))).toBeUndefined();
    expect(tagIndexKey(f({ t: ['x'] }, { ids: [refId] }))).toBeUndefined();
  });
});
