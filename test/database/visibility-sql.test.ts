/**
 * The SQL form of the visibility rules (visibilityFragment) against the per-event rule
 * (eventVisibleToReader) on a real Postgres: for every gated kind and an ordinary one, every tag
 * shape that decides a rule (p to the reader, p elsewhere, p out of position, one or two shared
 * tags, shared out of position) and three readers (author, p-tagged, bystander), both forms must
 * keep exactly the same rows, whether the read names its kinds or not.
 */
import { Pool } from 'pg';
import { compileSql, joinFragments, sqlText } from '../../src/events/event-sql.js';
import { VISIBILITY_GATED_KINDS } from '../../src/nostr/kinds.js';
import { eventVisibleToReader, visibilityFragment } from '../../src/events/visibility.js';
import type { NostrEvent } from '../../src/nostr/nostr.types.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new Pool({ connectionString: db.writerUrl, max: 1 });
  pool.on('error', () => undefined);
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const author = 'a1'.repeat(32);
const tagged = 'b2'.repeat(32);
const bystander = 'c3'.repeat(32);
const TAG_SHAPES: string[][][] = [
  [],
  [['p', tagged]],
  [['p', bystander.replace('c3', 'd4')]],
  [['x', 'p', tagged]],
  [[tagged, 'p']],
  [['shared', 'true']],
  [['shared', 'true'], ['shared', 'true']],
  [['true', 'shared']],
  [['shared', 'false'], ['p', tagged]],
];
const KINDS = [...VISIBILITY_GATED_KINDS, 9];

const corpus: NostrEvent[] = KINDS.flatMap((kind, k) =>
  TAG_SHAPES.map((tags, t) => ({ id: `${k.toString(16).padStart(2, '0')}${t.toString(16).padStart(2, '0')}`.padEnd(64, '0'), pubkey: author, created_at: 1, kind, tags, content: '', sig: '' })),
);

/** The ids of the corpus rows the SQL condition keeps for `reader`, reading `kinds`. */
async function sqlVisible(reader: string, kinds: number[] | undefined): Promise<string[]> {
  const rows = corpus.filter((ev) => kinds === undefined || kinds.includes(ev.kind));
  const condition = visibilityFragment(reader, kinds, 'e.') ?? sqlText('true');
  const values = { strings: ['(select * from jsonb_to_recordset(', "::jsonb) as r(id text, pubkey text, kind int, tags jsonb))"], values: [JSON.stringify(rows)] };
  const statement = compileSql(
    joinFragments(
      [sqlText("select e.id from (select r.id, decode(r.pubkey, 'hex') as pubkey, r.kind, r.tags from "), values, sqlText(' r) e where '), condition, sqlText(' order by e.id')],
      '',
    ),
  );
  const { rows: kept } = await pool.query<{ id: string }>(statement.text, statement.params);
  return kept.map((r) => r.id);
}

function jsVisible(reader: string, kinds: number[] | undefined): string[] {
  return corpus
    .filter((ev) => (kinds === undefined || kinds.includes(ev.kind)) && eventVisibleToReader(ev, reader))
    .map((ev) => ev.id)
    .sort();
}

describe.each([
  ['the author', author],
  ['the p-tagged reader', tagged],
  ['a bystander', bystander],
])('for %s', (_name, reader) => {
  it('keeps the same rows as the per-event rule when the read names no kinds', async () => {
    expect(await sqlVisible(reader, undefined)).toEqual(jsVisible(reader, undefined));
  });

  it.each(KINDS.map((k) => [k]))('keeps the same rows as the per-event rule for kinds [%i]', async (kind) => {
    expect(await sqlVisible(reader, [kind])).toEqual(jsVisible(reader, [kind]));
  });
});

it('the corpus exercises both outcomes of every gated kind but reports', () => {
  for (const kind of VISIBILITY_GATED_KINDS) {
    const outcomes = new Set(corpus.filter((ev) => ev.kind === kind).flatMap((ev) => [author, tagged, bystander].map((r) => eventVisibleToReader(ev, r))));
    expect([kind, [...outcomes].sort()]).toEqual([kind, kind === 1984 ? [false] : [false, true]]);
  }
});
