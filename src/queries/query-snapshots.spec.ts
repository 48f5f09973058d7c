/**
 * The hot statements as SQL a reviewer can read: each case runs the real repository code against
 * a Kysely whose driver records what it would send (test/harness/recording-kysely.ts), and the text is
 * compared with the committed file beside this spec. A change to a statement shows up in review
 * as a diff of these files; a change nobody meant shows up here, red.
 *
 * After a deliberate change: `npm run queries:update` rewrites the files, then review the diff.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DB } from '@buzz-relay/read-path';
import type { CompiledQuery, Kysely } from 'kysely';
import { format } from 'sql-formatter';
import { BridgeReadsRepository } from '../bridge/bridge-reads.repository.js';
import { EventReadRepository } from '../events/event-read.repository.js';
import { parseFilter } from '../nostr/filter.js';
import { EventWriteRepository } from '../events/event-write.repository.js';
import type { ReadScope } from '../channels/read-scope.js';
import type { StoredEventInput } from '../events/stored-event.js';
import { threadSummaries } from '../threads/thread-summaries.js';
import { recordingKysely } from '../../test/harness/recording-kysely.js';

const UPDATE = process.env.UPDATE_QUERY_SNAPSHOTS === '1';
const NOW_MS = Date.UTC(2026, 11, 1);
const NOW = NOW_MS / 1000;
const COMMUNITY = '00000000-0000-4000-8000-000000000001';
const CHANNEL = '00000000-0000-4000-8000-000000000002';
const READER = 'a'.repeat(64);
const AUTHOR = 'b'.repeat(64);
const ROOT = 'c'.repeat(64);
const scope: ReadScope = { communityId: COMMUNITY, channels: [CHANNEL], includeGlobal: true, reader: READER };

/** The statement laid out by sql-formatter (the hot path builds one-line text), then its parameters, one per line. */
function render(query: CompiledQuery): string {
  const text = format(query.sql, { language: 'postgresql', paramTypes: { numbered: ['$'] }, keywordCase: 'lower' });
  const params = query.parameters.map((p, i) => `-- $${i + 1} = ${JSON.stringify(p, (_k, v: unknown) => (isBufferJson(v) ? `\\x${Buffer.from(v.data).toString("hex")}` : typeof v === "bigint" ? v.toString() : v))}`);
  return [`${text};`, ...params].join('\n');
}

function isBufferJson(v: unknown): v is { type: 'Buffer'; data: number[] } {
  return typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer';
}

/**
 * What `work` sends, rendered. Every statement gets no rows but a count (a zero) and the
 * statement deadline's block probe, answered as on a pooled connection (autocommit).
 */
async function recorded(work: (db: Kysely<DB>) => Promise<unknown>): Promise<string[]> {
  const { db, sent } = recordingKysely<DB>((q) => {
    if (/count\(\*\) as n\b/.test(q.sql)) return [{ n: '0' }];
    return q.sql.includes('transaction_timestamp()') ? [{ implicit: true }] : [];
  });
  await work(db);
  await db.destroy();
  return sent.map(render);
}

function reply(i: number): StoredEventInput {
  const id = i.toString(16).padStart(64, '0');
  return {
    event: { id, pubkey: AUTHOR, created_at: NOW - 10 + i, kind: 9, tags: [['h', CHANNEL], ['e', ROOT, '', 'root'], ['p', READER]], content: 'reply', sig: 'd'.repeat(128) },
    channelId: CHANNEL,
    dTag: null,
    thread: { parent: { id: ROOT, createdAt: NOW - 100 }, root: { id: ROOT, createdAt: NOW - 100 }, depth: 1 },
    mentions: [READER],
  };
}

const reads = new EventReadRepository();
const writes = new EventWriteRepository();
const bridge = new BridgeReadsRepository();
/** A filter as a client sends it, parsed the way REQ parses it. */
function filter(raw: Record<string, unknown>) {
  const parsed = parseFilter(raw);
  if (!parsed.ok) throw new Error(`bad filter ${JSON.stringify(raw)}: ${parsed.reason}`);
  return parsed.filter;
}
const page = (raw: Record<string, unknown>, limit = 20) => (db: Kysely<DB>) => reads.queryPage(db, scope, filter(raw), limit, 0, NOW_MS);

/** One file per statement family; each case a titled list of the statements it sends, in order. */
const FILES: Record<string, Record<string, (db: Kysely<DB>) => Promise<unknown>>> = {
  'history-pages.sql': {
    "a channel's chat page, REQ {kinds:[9], #h:[channel], limit:50}: the recent window, then every partition": page({ kinds: [9], '#h': [CHANNEL] }, 50),
    'one author, REQ {authors:[pubkey]}': page({ authors: [AUTHOR] }),
    'a hashtag, REQ {kinds:[1], #t:[nostr]}: the event_tags walk': page({ kinds: [1], '#t': ['nostr'] }),
    'mentions, REQ {#p:[pubkey]}: the event_tags walk': page({ '#p': [READER] }),
    'a multi-letter tag, REQ {kinds:[30023], #title:[x]}: the tag walk, then the GIN index': page({ kinds: [30023], '#title': ['x'] }),
    'by id, REQ {ids:[id]}': page({ ids: [ROOT] }),
  },
  'e-tag-reads.sql': {
    'replies and reactions, REQ {kinds:[7,9], #e:[id]}: event_refs under the 20 s deadline': page({ kinds: [7, 9], '#e': [ROOT] }),
    'COUNT {kinds:[7], #e:[id]}': (db) => reads.count(db, scope, filter({ kinds: [7], '#e': [ROOT] })),
    "the bridge's aux closure, first hop": (db) => bridge.referencing(db, scope, [ROOT], [5, 7]),
    'thread summaries of a channel window page': (db) => threadSummaries(db, COMMUNITY, [{ id: ROOT, createdAt: NOW - 100 }], { repliedOnly: true }),
  },
  'writes.sql': {
    'a batch of two replies: events (with the floor lock), mentions, refs, thread rows and counters': async (db) => {
      const items = [reply(1), reply(2)];
      await writes.insertEvents(db, COMMUNITY, items, { lockFloor: true });
      await writes.insertMentions(db, COMMUNITY, items);
      await writes.insertRefs(db, COMMUNITY, items);
      await writes.applyThreads(db, COMMUNITY, items);
    },
  },
};

async function fileText(cases: Record<string, (db: Kysely<DB>) => Promise<unknown>>): Promise<string> {
  const parts = ['-- Generated by src/queries/query-snapshots.spec.ts (npm run queries:update); do not edit.'];
  for (const [title, work] of Object.entries(cases)) parts.push(`\n-- ${title}\n${(await recorded(work)).join('\n\n')}`);
  return `${parts.join('\n')}\n`;
}

describe('the hot statements match their committed SQL', () => {
  it.each(Object.keys(FILES))('%s', async (name) => {
    const path = join(import.meta.dirname, name);
    const text = await fileText(FILES[name]);
    if (UPDATE) writeFileSync(path, text);
    expect(text).toBe(readFileSync(path, 'utf8'));
  });
});
