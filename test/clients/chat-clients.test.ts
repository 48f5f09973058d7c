/**
 * Chat clients as their users write them (issue 29), each library in its own `node` process per
 * run (test/clients/*.mjs), against the built relay on the writer + replica pair:
 *
 * - nostr-tools `nip29.loadGroup` reads the relay's key from NIP-11 `pubkey` and loads the
 *   group's metadata, admins and members signed by it;
 * - nostr-tools `nip25.finishReactionEvent` and applesauce `ReactionFactory` build a reaction with
 *   `e` and `p` and no `h`: the relay stores it in its target's channel, so a channel's `#h` subscription gets it live and a
 *   `#h` history read finds it, stored as signed;
 * - NDK `event.reply()` on a chat message builds a NIP-22 kind 1111 comment (no `h`): stored in
 *   the message's channel and thread, read back by `#e` with NDK and by `#h` on the wire;
 * - NDK `NDKSimpleGroup` with its default group id (not a UUID) creates, names and posts to a
 *   group, then loads its metadata and member list by that id;
 * - applesauce `CreateGroupInviteFactory` (a 9009 with no code) and `GroupJoinRequestFactory` with
 *   the invite's event id as the code let a guest into the private channel.
 *
 * The `#h` sides are checked on the wire, by a plain client: nostr-tools and NDK drop an event
 * that does not match their own subscription's filters, and an event without `h` never matches
 * a `#h` filter there, whatever the relay sends; a `#e` subscription is not a channel
 * subscription, which relay.md §2.8 never sends channel events live. docs/moderation.md says
 * what a client does instead.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { bytesToHex } from 'nostr-tools/utils';
import { channelIdOf } from '../../src/nostr/group-id.js';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const RUNS = 3;
const TIMEOUT_MS = 15_000;

let fixture: RelayFixture;
let admin: RawClient;
const owner = newIdentity();
const channel = randomUUID();

beforeAll(async () => {
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
  admin = await RawClient.authed(fixture.relay.wsUrl, owner);
  expect(await admin.publish(owner.sign({ kind: 9007, tags: [['h', channel], ['name', 'clients'], ['visibility', 'private']] }))).toEqual([true, '']);
});

afterAll(async () => {
  admin?.close();
  await fixture?.close();
});

/** Runs one library scenario; resolves with its JSON report, or a string saying why there is none. */
function run<T>(script: string, input: object): Promise<T | string> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(import.meta.dirname, script), JSON.stringify({ timeoutMs: TIMEOUT_MS, ...input })], { timeout: TIMEOUT_MS * 2 }, (_err, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as T);
      } catch {
        resolve(`no report: ${stdout.slice(0, 300)} ${stderr.slice(0, 600)}`);
      }
    });
  });
}

/** A new member of the channel, added by its owner. */
async function member(): Promise<{ sk: string; pubkey: string }> {
  const user = newIdentity();
  expect(await admin.publish(owner.sign({ kind: 9000, tags: [['h', channel], ['p', user.pubkey]] }))).toEqual([true, '']);
  return { sk: bytesToHex(user.sk), pubkey: user.pubkey };
}

interface GroupReport {
  name?: string;
  admins: string[];
  members: string[];
  errors: string[];
}

it(`nostr-tools nip29.loadGroup loads the channel as a group through NIP-11's pubkey, ${RUNS} runs of ${RUNS}`, async () => {
  const outcomes: unknown[] = [];
  const expected: unknown[] = [];
  for (let i = 0; i < RUNS; i++) {
    const user = await member();
    const report = await run<GroupReport>('nostr-tools-nip29.mjs', { url: fixture.relay.wsUrl, sk: user.sk, group: channel });
    outcomes.push(typeof report === 'string' ? report : { name: report.name, owner: report.admins.includes(owner.pubkey), member: report.members.includes(user.pubkey), errors: report.errors });
    expected.push({ name: 'clients', owner: true, member: true, errors: [] });
  }
  expect(outcomes).toEqual(expected);
}, RUNS * TIMEOUT_MS * 2);

interface ReactionReport {
  seen: string[];
  closed: string[];
  published: unknown;
  id?: string;
  hasH?: boolean;
  errors: string[];
}

it.each([
  ['nostr-tools nip25.finishReactionEvent', 'nostr-tools-reaction.mjs'],
  ['applesauce ReactionFactory', 'applesauce-reaction.mjs'],
])(`a reaction built by %s (no h tag) reaches #h subscribers live and #h history, ${RUNS} runs of ${RUNS}`, async (_library, script) => {
  const outcomes: unknown[] = [];
  const before = await reactionsWithoutH();
  for (let i = 0; i < RUNS; i++) {
    const user = await member();
    const target = owner.sign({ kind: 9, content: `react to me ${randomUUID()}`, tags: [['h', channel]] });
    expect(await admin.publish(target)).toEqual([true, '']);
    const watcher = await RawClient.authed(fixture.relay.wsUrl, owner);
    const subscribed = await watcher.req('channel', { kinds: [7], '#h': [channel] });
    const report = await run<ReactionReport>(script, { url: fixture.relay.wsUrl, sk: user.sk, channel, target });
    if (typeof report === 'string') {
      outcomes.push(report);
      watcher.close();
      continue;
    }
    const live = await watcher.waitFor((f) => f[0] === 'EVENT' && f[1] === 'channel' && (f[2] as { id: string }).id === report.id, 5000).then(
      () => true,
      () => false,
    );
    const history = await watcher.req('history', { kinds: [7], '#h': [channel] });
    watcher.close();
    outcomes.push({
      hasH: report.hasH,
      published: report.published,
      byE: report.seen.includes(report.id!),
      live: subscribed.end[0] === 'EOSE' && live,
      history: history.events.some((e) => e.id === report.id),
      closed: report.closed,
      errors: report.errors,
    });
  }
  expect(outcomes).toEqual(Array(RUNS).fill({ hasH: false, published: '', byE: true, live: true, history: true, closed: [], errors: [] }));
  // Stored as signed: the relay derived the channel, it did not add a tag.
  expect(await reactionsWithoutH()).toBe(before + RUNS);
}, RUNS * TIMEOUT_MS * 2);

async function reactionsWithoutH(): Promise<number> {
  const { rows } = await fixture.writer.query<{ n: number }>(`select count(*)::int as n from events where kind = 7 and channel_id = $1 and not tags @> '[["h"]]'`, [channel]);
  return rows[0].n;
}

interface CommentReport {
  kind?: number;
  hasH?: boolean;
  id?: string;
  published: unknown;
  found: string[];
  errors: string[];
}

async function threadRow(id: string): Promise<{ channel: string; parent: string | null; replies: number } | undefined> {
  const { rows } = await fixture.writer.query<{ channel: string; parent: string | null }>(
    `select e.channel_id::text as channel, encode(t.parent_event_id, 'hex') as parent
       from events e left join thread_metadata t on t.event_id = e.id and t.event_created_at = e.created_at
      where e.id = decode($1, 'hex')`,
    [id],
  );
  if (rows.length === 0) return undefined;
  const { rows: counts } = await fixture.writer.query<{ n: number }>(`select reply_count::int as n from thread_metadata where event_id = decode($1, 'hex')`, [rows[0].parent ?? '']);
  return { ...rows[0], replies: counts[0]?.n ?? 0 };
}

it(`an NDK reply to a chat message (kind 1111, no h) is stored in the message's channel and thread, ${RUNS} runs of ${RUNS}`, async () => {
  const outcomes: unknown[] = [];
  const expected: unknown[] = [];
  for (let i = 0; i < RUNS; i++) {
    const user = await member();
    const target = owner.sign({ kind: 9, content: `comment on me ${randomUUID()}`, tags: [['h', channel]] });
    expect(await admin.publish(target)).toEqual([true, '']);
    const report = await run<CommentReport>('ndk-comment.mjs', { url: fixture.relay.wsUrl, sk: user.sk, targetId: target.id });
    if (typeof report === 'string') {
      outcomes.push(report);
      continue;
    }
    const history = await admin.req(`h${i}`, { kinds: [1111], '#h': [channel] });
    outcomes.push({
      kind: report.kind,
      hasH: report.hasH,
      published: report.published,
      foundByE: report.found.includes(report.id!),
      foundByH: history.events.some((e) => e.id === report.id),
      stored: await threadRow(report.id!),
      errors: report.errors,
    });
    expected.push({ kind: 1111, hasH: false, published: 1, foundByE: true, foundByH: true, stored: { channel, parent: target.id, replies: 1 }, errors: [] });
  }
  expect(outcomes).toEqual(expected);
}, RUNS * TIMEOUT_MS * 2);

it('refuses a comment whose parent is not stored here, as for a reaction', async () => {
  const someone = newIdentity();
  const c = await RawClient.authed(fixture.relay.wsUrl, someone);
  const orphan = someone.sign({ kind: 1111, content: 'on nothing', tags: [['e', 'ab'.repeat(32)], ['k', '9']] });
  expect(await c.publish(orphan)).toEqual([false, 'invalid: comment parent event not found']);
  c.close();
});

interface GroupCreateReport {
  groupId?: string;
  steps: Record<string, unknown>;
  name?: string;
  members: string[];
  found: string[];
  postId?: string;
  errors: string[];
}

it(`an NDKSimpleGroup with NDK's default id (not a UUID) is created, named, posted to and loaded by that id, ${RUNS} runs of ${RUNS}`, async () => {
  const outcomes: unknown[] = [];
  const expected: unknown[] = [];
  for (let i = 0; i < RUNS; i++) {
    const user = newIdentity();
    const name = `ndk group ${i}`;
    const report = await run<GroupCreateReport>('ndk-group.mjs', { url: fixture.relay.wsUrl, sk: bytesToHex(user.sk), name });
    if (typeof report === 'string') {
      outcomes.push(report);
      continue;
    }
    const { rows } = await fixture.writer.query<{ group_id: string; name: string }>(`select group_id, name from channels where id = $1`, [channelIdOf(report.groupId ?? '') ?? randomUUID()]);
    outcomes.push({ uuid: /^[0-9a-f-]{36}$/i.test(report.groupId ?? ''), steps: report.steps, name: report.name, members: report.members, found: report.found.includes(report.postId!), channel: rows[0], errors: report.errors });
    expected.push({ uuid: false, steps: { create: 1, name: 1, post: 1 }, name, members: [user.pubkey], found: true, channel: { group_id: report.groupId, name }, errors: [] });
  }
  expect(outcomes).toEqual(expected);
}, RUNS * TIMEOUT_MS * 2);

interface InviteReport {
  invite?: string;
  join?: string;
  read?: string[];
  errors: string[];
}

it(`an applesauce invite without a code admits the guest it is shared with, once, ${RUNS} runs of ${RUNS}`, async () => {
  const welcome = owner.sign({ kind: 9, content: `welcome ${randomUUID()}`, tags: [['h', channel]] });
  expect(await admin.publish(welcome)).toEqual([true, '']);
  const outcomes: unknown[] = [];
  for (let i = 0; i < RUNS; i++) {
    // The factory's 9009 has no nonce: two built by one admin in the same second are one event
    // (answered `duplicate:`), so one code (docs/moderation.md). Runs are a second apart, as clicks are.
    if (i > 0) await new Promise((r) => setTimeout(r, 1100));
    const guest = newIdentity();
    const report = await run<InviteReport>('applesauce-invite.mjs', { url: fixture.relay.wsUrl, adminSk: bytesToHex(owner.sk), guestSk: bytesToHex(guest.sk), group: channel });
    const { rows } = await fixture.writer.query<{ role: string }>(`select role from channel_members where channel_id = $1 and pubkey = $2 and removed_at is null`, [channel, guest.pubkey]);
    outcomes.push(typeof report === 'string' ? report : { invite: report.invite, join: report.join, reads: report.read?.includes(welcome.id), role: rows[0]?.role, errors: report.errors });
  }
  expect(outcomes).toEqual(Array(RUNS).fill({ invite: 'ok', join: 'ok', reads: true, role: 'member', errors: [] }));
  // Each code admitted one guest: none is left open.
  const { rows } = await fixture.writer.query<{ open: number }>(`select count(*)::int as open from channel_invites where channel_id = $1 and used_at is null`, [channel]);
  expect(rows[0].open).toBe(0);
}, RUNS * TIMEOUT_MS * 2);
