/**
 * Per-kind validators on the real relay (relay.md §1.3, §2.5 step 5, §5.2 step 12): edit ownership
 * (author, or the owner recorded for the authoring agent at NIP-42 AUTH, first write wins), forum
 * vote targets, the diff envelope and kind-0 JSON. Refused events are checked to be absent from
 * the writer, not only answered with OK false.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { authTemplate, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { mintAuthTag } from '../harness/nip-oa-tag.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

let fixture: RelayFixture;
let writer: Pool;
const alice = newIdentity();
const stranger = newIdentity();
const owner = newIdentity();
const secondOwner = newIdentity();
const agent = newIdentity();
const channel = randomUUID();
const clients: RawClient[] = [];

beforeAll(async () => {
  // No BUZZ_ALLOW_NIP_OA_AUTH: the owner mapping does not depend on it.
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '50', BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
  writer = fixture.writer;
  const a = await client(alice);
  expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', channel], ['name', 'kinds']] }))).toEqual([true, '']);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await fixture?.close();
});

async function client(id: Identity, authTags: string[][] = [], relay: RelayProcess = fixture.relay): Promise<RawClient> {
  const c = await RawClient.connect(relay.wsUrl);
  clients.push(c);
  const template = authTemplate(c.challenge, relay.wsUrl);
  const auth = finalizeEvent({ ...template, tags: [...template.tags, ...authTags] }, id.sk);
  c.send(['AUTH', auth]);
  const ok = await c.waitFor((f) => f[0] === 'OK' && f[1] === auth.id);
  expect([ok[2], ok[3]]).toEqual([true, '']);
  return c;
}

async function stored(ev: VerifiedEvent): Promise<boolean> {
  const { rowCount } = await writer.query(`select 1 from events where id = decode($1, 'hex') and deleted_at is null`, [ev.id]);
  return rowCount === 1;
}

async function ownerOf(agentPubkey: string): Promise<string | undefined> {
  const { rows } = await writer.query<{ owner_pubkey: string }>(`select owner_pubkey from agent_owners where agent_pubkey = $1`, [agentPubkey]);
  return rows[0]?.owner_pubkey;
}

function inChannel(id: Identity, kind: number, content: string, tags: string[][] = []): VerifiedEvent {
  return id.sign({ kind, content, tags: [['h', channel], ...tags] });
}

async function expectRefused(c: RawClient, ev: VerifiedEvent, message: string): Promise<void> {
  expect(await c.publish(ev)).toEqual([false, message]);
  expect(await stored(ev)).toBe(false);
}

describe('kind 40003 edit ownership', () => {
  it('stores an edit by the author and refuses one by a stranger', async () => {
    const a = await client(alice);
    const s = await client(stranger);
    const original = inChannel(alice, 9, 'hello wrold');
    expect(await a.publish(original)).toEqual([true, '']);
    const edit = inChannel(alice, 40003, 'hello world', [['e', original.id]]);
    expect(await a.publish(edit)).toEqual([true, '']);
    expect(await stored(edit)).toBe(true);
    await expectRefused(s, inChannel(stranger, 40003, 'pwned', [['e', original.id]]), 'restricted: only the author or its owner can edit a message');
  });

  it('refuses an edit without an e tag, of a missing message, or from another channel', async () => {
    const a = await client(alice);
    await expectRefused(a, inChannel(alice, 40003, 'x'), 'invalid: edit must reference the edited message via e tag');
    await expectRefused(a, inChannel(alice, 40003, 'x', [['e', 'f'.repeat(64)]]), 'invalid: edited message not found');
    const original = inChannel(alice, 9, 'here');
    expect(await a.publish(original)).toEqual([true, '']);
    const elsewhere = randomUUID();
    const moved = alice.sign({ kind: 40003, content: 'x', tags: [['h', elsewhere], ['e', original.id]] });
    await expectRefused(a, moved, "invalid: edit must be in the edited message's channel");
  });

  it("accepts an edit by the recorded owner of the agent that wrote the message; the first owner's mapping wins", async () => {
    const ag = await client(agent, [mintAuthTag(owner.sk, agent.pubkey)]);
    expect(await ownerOf(agent.pubkey)).toBe(owner.pubkey);
    // A later AUTH proving a different owner authenticates but does not replace the mapping.
    const ag2 = await client(agent, [mintAuthTag(secondOwner.sk, agent.pubkey)]);
    expect(await ownerOf(agent.pubkey)).toBe(owner.pubkey);

    const original = inChannel(agent, 9, 'agent says hi');
    expect(await ag.publish(original)).toEqual([true, '']);
    const o = await client(owner);
    const byOwner = inChannel(owner, 40003, 'agent says hello', [['e', original.id]]);
    expect(await o.publish(byOwner)).toEqual([true, '']);
    expect(await stored(byOwner)).toBe(true);

    const o2 = await client(secondOwner);
    await expectRefused(o2, inChannel(secondOwner, 40003, 'mine now', [['e', original.id]]), 'restricted: only the author or its owner can edit a message');
    // The agent still edits its own message, from either session.
    expect(await ag2.publish(inChannel(agent, 40003, 'agent says hey', [['e', original.id]]))).toEqual([true, '']);
  });
});

describe('owner mapping on a relay that requires relay membership', () => {
  it('records the owner only when the owner is a relay member', async () => {
    const closed = await startRelay(relayEnv(fixture.db, { BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true' }));
    try {
      const memberOwner = newIdentity();
      const outsiderOwner = newIdentity();
      const [agentA, agentB] = [newIdentity(), newIdentity()];
      await writer.query(`insert into relay_members (community_id, pubkey) select id, unnest($1::text[]) from communities where host = 'localhost'`, [
        [memberOwner.pubkey, agentA.pubkey, agentB.pubkey],
      ]);
      await client(agentA, [mintAuthTag(outsiderOwner.sk, agentA.pubkey)], closed);
      expect(await ownerOf(agentA.pubkey)).toBeUndefined();
      await client(agentB, [mintAuthTag(memberOwner.sk, agentB.pubkey)], closed);
      expect(await ownerOf(agentB.pubkey)).toBe(memberOwner.pubkey);
    } finally {
      await closed.stop();
    }
  });
});

describe('kind 45002 forum vote', () => {
  it('accepts a vote on a forum post or comment and refuses one on a stream message', async () => {
    const a = await client(alice);
    const s = await client(stranger);
    const post = inChannel(alice, 45001, 'Which editor?');
    expect(await a.publish(post)).toEqual([true, '']);
    const comment = inChannel(alice, 45003, 'vim', [['e', post.id, '', 'root']]);
    expect(await a.publish(comment)).toEqual([true, '']);
    for (const target of [post, comment]) {
      const vote = inChannel(stranger, 45002, '+', [['e', target.id]]);
      expect(await s.publish(vote)).toEqual([true, '']);
      expect(await stored(vote)).toBe(true);
    }
    const message = inChannel(alice, 9, 'not a forum post');
    expect(await a.publish(message)).toEqual([true, '']);
    await expectRefused(s, inChannel(stranger, 45002, '+', [['e', message.id]]), 'invalid: vote target must be a forum post or comment in the same channel');
    await expectRefused(s, inChannel(stranger, 45002, '+'), 'invalid: vote must reference a forum post or comment via e tag');
  });
});

describe('kind 40008 diff and kind 0 profile', () => {
  it('stores a well-formed diff and refuses bad ones', async () => {
    const a = await client(alice);
    const good = inChannel(alice, 40008, '--- a/x\n+++ b/x\n', [['repo', 'https://git.example.com/buzz.git'], ['commit', 'deadbeef']]);
    expect(await a.publish(good)).toEqual([true, '']);
    await expectRefused(a, inChannel(alice, 40008, 'd', [['repo', 'ftp://example.com/r'], ['commit', 'deadbeef']]), 'invalid: diff requires a repo tag with an http or https URL');
    await expectRefused(a, inChannel(alice, 40008, 'd', [['repo', 'https://example.com/r'], ['commit', 'abc']]), 'invalid: diff requires a commit tag of at least 7 hex characters');
    const big = 'x'.repeat(61_441);
    await expectRefused(a, inChannel(alice, 40008, big, [['repo', 'https://example.com/r'], ['commit', 'deadbeef']]), 'invalid: diff content exceeds maximum size of 61440 bytes (got 61441)');
  });

  it('stores a JSON-object profile and refuses other content', async () => {
    const a = await client(alice);
    const t = Math.floor(Date.now() / 1000);
    await expectRefused(a, alice.sign({ kind: 0, content: 'not json', created_at: t - 2 }), 'invalid: profile content must be a JSON object');
    await expectRefused(a, alice.sign({ kind: 0, content: '["alice"]', created_at: t - 1 }), 'invalid: profile content must be a JSON object');
    const profile = alice.sign({ kind: 0, content: '{"name":"alice"}', created_at: t });
    expect(await a.publish(profile)).toEqual([true, '']);
    expect(await stored(profile)).toBe(true);
  });
});

describe('archived channels', () => {
  it('take no message and no edit until a metadata edit unarchives them', async () => {
    const a = await client(alice);
    const archivedChannel = randomUUID();
    expect(await a.publish(alice.sign({ kind: 9007, tags: [['h', archivedChannel], ['name', 'old']] }))).toEqual([true, '']);
    const before = alice.sign({ kind: 9, content: 'before', tags: [['h', archivedChannel]] });
    expect(await a.publish(before)).toEqual([true, '']);
    expect(await a.publish(alice.sign({ kind: 9002, tags: [['h', archivedChannel], ['archived']] }))).toEqual([true, '']);
    await expectRefused(a, alice.sign({ kind: 9, content: 'during', tags: [['h', archivedChannel]] }), 'invalid: channel is archived');
    await expectRefused(a, alice.sign({ kind: 40003, content: 'edited', tags: [['h', archivedChannel], ['e', before.id]] }), 'invalid: channel is archived');
    expect(await a.publish(alice.sign({ kind: 9002, tags: [['h', archivedChannel], ['unarchived']] }))).toEqual([true, '']);
    const after = alice.sign({ kind: 9, content: 'after', tags: [['h', archivedChannel]] });
    expect(await a.publish(after)).toEqual([true, '']);
  });
});
