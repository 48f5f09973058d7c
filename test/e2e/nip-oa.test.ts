/**
 * NIP-OA owner admission at NIP-42 AUTH (relay.md §2.5), on a relay that requires relay
 * membership: an agent whose AUTH carries exactly one valid `auth` tag from a member owner is
 * admitted "via owner" only with BUZZ_ALLOW_NIP_OA_AUTH; a tag that does not verify fails
 * verification; an owner's ban cascades to the agent whatever the flag.
 */
import { Pool } from 'pg';
import { finalizeEvent } from 'nostr-tools/pure';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { authTemplate, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { mintAuthTag } from '../harness/nip-oa-tag.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

/** The bridge tests below name the agent with the X-Pubkey development header. */
const DEV_HEADER = { BUZZ_REQUIRE_AUTH_TOKEN: 'false' };

let fixture: RelayFixture;
let writer: Pool;
let withOa: RelayProcess;
let withoutOa: RelayProcess;
const owner = newIdentity();
const agent = newIdentity();
const strangerOwner = newIdentity();

beforeAll(async () => {
  fixture = await startRelayFixture({ BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true', BUZZ_ALLOW_NIP_OA_AUTH: 'true', ...DEV_HEADER });
  ({ relay: withOa, writer } = fixture);
  withoutOa = await startRelay(relayEnv(fixture.db, { BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true', ...DEV_HEADER }));
  await writer.query(`insert into relay_members (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [owner.pubkey]);
});

afterAll(async () => {
  await withoutOa?.stop();
  await fixture?.close();
});

/** AUTHs as `id` with extra tags; the relay's OK reply and the client. */
async function auth(relay: RelayProcess, id: Identity, tags: string[][], createdAt?: number): Promise<{ ok: boolean; message: string; client: RawClient }> {
  const client = await RawClient.connect(relay.wsUrl);
  const template = authTemplate(client.challenge, relay.wsUrl);
  const ev = finalizeEvent({ ...template, created_at: createdAt ?? template.created_at, tags: [...template.tags, ...tags] }, id.sk);
  client.send(['AUTH', ev]);
  const ok = await client.waitFor((f) => f[0] === 'OK' && f[1] === ev.id);
  return { ok: ok[2] as boolean, message: ok[3] as string, client };
}

async function expectAuth(relay: RelayProcess, id: Identity, tags: string[][], ok: boolean, message: string): Promise<RawClient> {
  const res = await auth(relay, id, tags);
  expect([res.ok, res.message]).toEqual([ok, message]);
  return res.client;
}

describe('NIP-OA owner admission', () => {
  it('admits an agent via its member owner when BUZZ_ALLOW_NIP_OA_AUTH is on, and the session works', async () => {
    const client = await expectAuth(withOa, agent, [mintAuthTag(owner.sk, agent.pubkey, 'kind=9')], true, '');
    const { end } = await client.req('s', { kinds: [1], limit: 1 });
    expect(end[0]).toBe('EOSE');
    client.close();
  });

  it('does not admit via owner when the flag is off', async () => {
    (await expectAuth(withoutOa, agent, [mintAuthTag(owner.sk, agent.pubkey)], false, 'restricted: not a relay member')).close();
  });

  it('admits the member owner itself on both relays, with no tag', async () => {
    (await expectAuth(withOa, owner, [], true, '')).close();
    (await expectAuth(withoutOa, owner, [], true, '')).close();
  });

  it.each([
    ['no auth tag', () => []],
    ['two auth tags (exactly one is required)', () => [mintAuthTag(owner.sk, agent.pubkey), mintAuthTag(owner.sk, agent.pubkey, 'kind=9')]],
    ['a valid tag from an owner who is not a member', () => [mintAuthTag(strangerOwner.sk, agent.pubkey)]],
  ])('refuses %s as a non-member', async (_name, tags) => {
    (await expectAuth(withOa, agent, tags(), false, 'restricted: not a relay member')).close();
  });

  it.each([
    ['a tag minted for another agent', () => [mintAuthTag(owner.sk, newIdentity().pubkey)]],
    ['a tag whose conditions were altered', () => [mintAuthTag(owner.sk, agent.pubkey, 'kind=9').map((v, i) => (i === 2 ? 'kind=1' : v))]],
    ['an expired tag', () => [mintAuthTag(owner.sk, agent.pubkey, `created_at<${Math.floor(Date.now() / 1000) - 30}`)]],
    ['a self-attestation', () => [mintAuthTag(agent.sk, agent.pubkey)]],
    ['a malformed tag', () => [['auth', owner.pubkey, '']]],
  ])('fails verification for %s, on either relay', async (_name, tags) => {
    (await expectAuth(withOa, agent, tags(), false, 'auth-required: verification failed')).close();
    (await expectAuth(withoutOa, agent, tags(), false, 'auth-required: verification failed')).close();
  });

  it("cascades the owner's ban to its agent and closes the socket", async () => {
    const bannedOwner = newIdentity();
    const memberAgent = newIdentity();
    await writer.query(
      `insert into relay_members (community_id, pubkey) select id, unnest($1::text[]) from communities where host = 'localhost'`,
      [[bannedOwner.pubkey, memberAgent.pubkey]],
    );
    await writer.query(`insert into bans (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [bannedOwner.pubkey]);
    for (const relay of [withOa, withoutOa]) {
      const client = await expectAuth(relay, memberAgent, [mintAuthTag(bannedOwner.sk, memberAgent.pubkey)], false, 'blocked: you are banned from this community');
      await client.waitClosed();
    }
    // The same agent without the owner's tag is just a member.
    (await expectAuth(withOa, memberAgent, [], true, '')).close();
  });
});

describe('NIP-OA on the HTTP bridge (x-auth-tag)', () => {
  async function query(relay: RelayProcess, id: Identity, authTag?: string): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { 'x-pubkey': id.pubkey };
    if (authTag !== undefined) headers['x-auth-tag'] = authTag;
    const res = await fetch(`${relay.httpUrl}/query`, { method: 'POST', headers, body: JSON.stringify([{ kinds: [1], limit: 1 }]) });
    return { status: res.status, body: await res.json() };
  }

  it('admits an agent via its member owner only with BUZZ_ALLOW_NIP_OA_AUTH', async () => {
    const tag = JSON.stringify(mintAuthTag(owner.sk, agent.pubkey));
    expect((await query(withOa, agent, tag)).status).toBe(200);
    expect(await query(withoutOa, agent, tag)).toMatchObject({ status: 403, body: { error: 'relay_membership_required' } });
    expect(await query(withOa, agent)).toMatchObject({ status: 403, body: { error: 'relay_membership_required' } });
  });

  it.each([
    ['not JSON', () => 'auth', 'invalid x-auth-tag: not JSON'],
    ['not an auth tag', () => JSON.stringify(['p', owner.pubkey]), 'invalid x-auth-tag: must be a JSON array ["auth", owner, conditions, sig]'],
    ['a tag for another agent', () => JSON.stringify(mintAuthTag(owner.sk, newIdentity().pubkey)), 'invalid x-auth-tag: signature does not verify'],
    ['an expired tag', () => JSON.stringify(mintAuthTag(owner.sk, agent.pubkey, `created_at<${Math.floor(Date.now() / 1000) - 30}`)), 'invalid x-auth-tag: outside the attestation validity period'],
  ])('refuses %s with 401', async (_name, tag, error) => {
    expect(await query(withOa, agent, tag())).toEqual({ status: 401, body: { error } });
  });
});

describe('agent quota tier', () => {
  let tiered: RelayProcess;
  beforeAll(async () => {
    tiered = await startRelay(
      relayEnv(fixture.db, {
        BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true',
        BUZZ_ALLOW_NIP_OA_AUTH: 'true',
        BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '2',
        BUZZ_RATE_LIMIT_AGENT_STANDARD_MESSAGES_PER_MIN: '4',
      }),
    );
  });
  afterAll(() => tiered?.stop());

  /** OK outcomes of `n` EVENTs published in a row by `id`. */
  async function publishMany(client: RawClient, id: Identity, n: number): Promise<boolean[]> {
    const out: boolean[] = [];
    for (let i = 0; i < n; i++) out.push((await client.publish(id.sign({ kind: 1, content: `tier ${i} ${id.pubkey.slice(0, 8)}` })))[0]);
    return out;
  }

  it('an agent session gets the agent-standard message quota, a human the human one', async () => {
    const agentClient = (await auth(tiered, agent, [mintAuthTag(owner.sk, agent.pubkey)])).client;
    expect(await publishMany(agentClient, agent, 5)).toEqual([true, true, true, true, false]);
    agentClient.close();
    const ownerClient = (await auth(tiered, owner, [])).client;
    expect(await publishMany(ownerClient, owner, 3)).toEqual([true, true, false]);
    ownerClient.close();
  });
});
