/**
 * The operator CLI (`npm run admin`) against the real writer + replica: a fresh database is
 * bootstrapped without SQL (migrations, community, members), every change is visible on both
 * servers, the NIP-43 state follows as for a signed command, and bad input is refused with a
 * clear message and exit status 2 (refusals by the services: 1). Each run starts a Node process
 * that loads the relay's services, so the tests get generous time on a shared machine.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { nip19 } from 'nostr-tools';
import { finalizeEvent, getPublicKey } from 'nostr-tools/pure';
import { authTemplate, Identity, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { PairState } from './membership-state.js';

const ADMIN_CLI = path.resolve(import.meta.dirname, '../../dist/src/admin/admin.cli.js');
const CLI_TEST_MS = 300_000;
/** What a command without --host says first, on stderr (the test's BUZZ_DEFAULT_COMMUNITY_HOSTS is team.example). */
const DEFAULT_HOST_NOTE = 'admin: acting on host team.example (the first of BUZZ_DEFAULT_COMMUNITY_HOSTS; --host <host> to choose)\n';
const RELAY_KEY = randomBytes(32).toString('hex');
const RELAY_PUBKEY = getPublicKey(Buffer.from(RELAY_KEY, 'hex'));
const owner = newIdentity();
const alice = newIdentity();
let db: TestDatabase;
let pair: PairState;

beforeAll(async () => {
  db = await createTestDatabase();
  pair = new PairState(db);
});

afterAll(async () => {
  await pair?.close();
  await db?.drop();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function admin(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { PATH: process.env.PATH ?? '', DATABASE_URL: db.writerUrl, RELAY_OWNER_PUBKEY: owner.pubkey, BUZZ_DEFAULT_COMMUNITY_HOSTS: 'team.example', BUZZ_RELAY_PRIVATE_KEY: RELAY_KEY };
  return promisify(execFile)(process.execPath, [ADMIN_CLI, ...args], { env: { ...base, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: Run) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** AUTH on the team.example community of `relay` (Host header and relay tag name the tenant host). */
async function authOn(relay: RelayProcess, id: Identity): Promise<[boolean, string]> {
  const host = `team.example:${relay.port}`;
  const c = await RawClient.connect(relay.wsUrl, { host });
  try {
    const auth = finalizeEvent(authTemplate(c.challenge, `ws://${host}`), id.sk);
    c.send(['AUTH', auth]);
    const ok = await c.waitFor((f) => f[0] === 'OK' && f[1] === auth.id);
    return [ok[2] as boolean, ok[3] as string];
  } finally {
    c.close();
  }
}

async function roleIn(host: string, pubkey: string): Promise<[string | null, string | null]> {
  return pair.both(
    'select m.role from relay_members m join communities c on c.id = m.community_id where c.host = $1 and m.pubkey = $2',
    [host, pubkey],
    (rows) => (rows[0]?.role as string | undefined) ?? null,
  );
}

describe('operator CLI', () => {
  it('bootstraps a community, adds members by npub or hex and lists them; a closed relay then admits them', async () => {
    const created = await admin(['create-community', '--host', 'Team.Example']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^community team\.example: [0-9a-f-]{36}\nowner [0-9a-f]{64} \(RELAY_OWNER_PUBKEY\)\n$/);
    expect(await roleIn('team.example', owner.pubkey)).toEqual(['owner', 'owner']);
    expect(await admin(['add-member', nip19.npubEncode(alice.pubkey)])).toMatchObject({ code: 0, stdout: `${alice.pubkey} is a member of team.example\n`, stderr: DEFAULT_HOST_NOTE });
    // Asked for admin, alice stays a member, and is told so (it used to print "is a admin").
    expect(await admin(['add-member', alice.pubkey, '--role', 'admin'])).toMatchObject({
      code: 0,
      stdout: `${alice.pubkey} is already a member of team.example and stays one: add-member never changes a role (set-role ${alice.pubkey} --role admin does)\n`,
    });
    // set-role does, and says what it did; asked again, it says nothing changed.
    expect(await admin(['set-role', alice.pubkey, '--role', 'admin'])).toMatchObject({ code: 0, stdout: `${alice.pubkey} is now an admin of team.example (was a member)\n` });
    expect(await roleIn('team.example', alice.pubkey)).toEqual(['admin', 'admin']);
    expect(await admin(['set-role', alice.pubkey, '--role', 'admin'])).toMatchObject({ code: 0, stdout: `${alice.pubkey} is already an admin of team.example: nothing changed\n` });
    expect(await admin(['set-role', alice.pubkey, '--role', 'member'])).toMatchObject({ code: 0, stdout: `${alice.pubkey} is now a member of team.example (was an admin)\n` });
    const stranger = newIdentity().pubkey;
    expect(await admin(['set-role', stranger, '--role', 'admin'])).toMatchObject({ code: 2, stderr: `${DEFAULT_HOST_NOTE}admin: ${stranger} is not a member of team.example (add-member --role admin adds them)\n` });
    expect((await admin(['set-role', alice.pubkey])).stderr.split('\n')[0]).toBe('admin: set-role needs --role member|admin');
    const bob = newIdentity();
    expect(await admin(['add-member', bob.pubkey.toUpperCase(), '--role', 'admin', '--host', 'team.example'])).toMatchObject({ code: 0, stderr: '' });
    expect(await roleIn('team.example', alice.pubkey)).toEqual(['member', 'member']);
    expect(await roleIn('team.example', bob.pubkey)).toEqual(['admin', 'admin']);
    const listed = await admin(['list-members']);
    expect(listed.stdout.trim().split('\n').sort()).toEqual([`${alice.pubkey} member`, `${bob.pubkey} admin`, `${owner.pubkey} owner`].sort());
    // The relay-signed NIP-43 state follows, as for a 9030, signed with the relay's key.
    const [snapshot, ...superseded] = await pair.liveEvents(RELAY_PUBKEY, 13534);
    expect(superseded).toEqual([]);
    expect(snapshot.tags).toContainEqual(['member', alice.pubkey]);
    expect((await pair.liveEvents(RELAY_PUBKEY, 8000)).map((e) => e.tags)).toContainEqual([['-'], ['p', alice.pubkey]]);
    // A relay started on the bootstrapped database admits alice on its closed community.
    const relay: RelayProcess = await startRelay({ DATABASE_URL: db.writerUrl, READ_DATABASE_URL: db.readerUrl, BUZZ_REQUIRE_RELAY_MEMBERSHIP: 'true' });
    try {
      expect(await authOn(relay, alice)).toEqual([true, '']);
      expect(await authOn(relay, newIdentity())).toEqual([false, 'restricted: not a relay member']);
    } finally {
      await relay.stop();
    }
  }, CLI_TEST_MS);

  it('removes, bans and unbans, visible on both servers; refusals from the services exit 1', async () => {
    const carol = newIdentity();
    expect((await admin(['add-member', carol.pubkey])).code).toBe(0);
    expect(await admin(['remove-member', carol.pubkey])).toMatchObject({ code: 0, stdout: `${carol.pubkey} removed from team.example\n` });
    expect(await roleIn('team.example', carol.pubkey)).toEqual([null, null]);
    expect(await admin(['remove-member', carol.pubkey])).toMatchObject({ code: 1, stderr: `${DEFAULT_HOST_NOTE}admin: refused: invalid: member not found: ${carol.pubkey}\n` });
    const until = Math.floor(Date.now() / 1000) + 3600;
    expect(await admin(['ban', carol.pubkey, '--reason', 'spam', '--expires', String(until)])).toMatchObject({ code: 0, stdout: `${carol.pubkey} banned from team.example until ${until}\n` });
    expect(await pair.both('select reason, extract(epoch from expires_at)::bigint::int as exp from bans where pubkey = $1', [carol.pubkey], (r) => r[0] ?? null)).toEqual([
      { reason: 'spam', exp: until },
      { reason: 'spam', exp: until },
    ]);
    expect(await admin(['unban', nip19.npubEncode(carol.pubkey)])).toMatchObject({ code: 0 });
    expect(await pair.both('select 1 from bans where pubkey = $1', [carol.pubkey], (r) => r.length)).toEqual([0, 0]);
    expect(await admin(['unban', carol.pubkey])).toMatchObject({ code: 1, stderr: DEFAULT_HOST_NOTE + 'admin: refused: invalid: member is not banned\n' });
    // One audit row per change, with no actor (the CLI), none for the refused unban.
    const audit = (rows: Record<string, unknown>[]) => rows.map((r) => [r.action, r.actor_pubkey, r.reason]);
    const trail = [['ban', null, 'spam'], ['unban', null, null]];
    expect(await pair.both('select action, actor_pubkey, reason from moderation_actions where target_pubkey = $1 order by created_at', [carol.pubkey], audit)).toEqual([trail, trail]);
    expect(await admin(['ban', owner.pubkey])).toMatchObject({ code: 1, stderr: DEFAULT_HOST_NOTE + 'admin: refused: restricted: cannot moderate a relay owner, operator or admin of equal or higher rank\n' });
    expect(await admin(['remove-member', owner.pubkey])).toMatchObject({ code: 1, stderr: DEFAULT_HOST_NOTE + 'admin: refused: invalid: cannot remove the relay owner\n' });
  }, CLI_TEST_MS);

  it('refuses bad input with a clear message and exit status 2, changing nothing', async () => {
    const typo = nip19.npubEncode(alice.pubkey).replace(/.$/, (c) => (c === 'q' ? 'p' : 'q'));
    const cases: Array<[string[], string]> = [
      [['add-member', 'alice'], 'admin: not a 64-hex pubkey or an npub: "alice"'],
      [['add-member', typo], 'admin: npub checksum does not match (a typo?)'],
      [['add-member'], 'admin: add-member takes exactly one <npub|hex> pubkey'],
      [['add-member', alice.pubkey, '--role', 'owner'], 'admin: --role must be member or admin'],
      [['ban', alice.pubkey, '--expires', 'tomorrow'], 'admin: --expires must be a future unix time in seconds'],
      [['unban', alice.pubkey, '--reason', 'x'], 'admin: --reason does not apply to unban'],
      [['create-community'], 'admin: create-community needs --host <host>'],
      [['promote', alice.pubkey], 'admin: unknown command "promote"'],
      [[], 'admin: no command given'],
      [['list-members', '--host', 'nowhere.example'], 'admin: no community for host nowhere.example (create it with create-community --host nowhere.example)'],
      // Not hosts, as the relay's own Host parser reads them (src/common/host.ts).
      ...['*', '\uff4cocalhost', 'x@localhost', ':33000', 'evil\u0001.test'].map((h): [string[], string] => [['create-community', '--host', h], `admin: invalid --host ${JSON.stringify(h)}`]),
      // A pasted secret key is refused without being repeated.
      [['add-member', nip19.nsecEncode(alice.sk)], 'admin: that is a secret key (nsec): give the public key (npub or 64-hex), and keep the nsec private'],
    ];
    for (const [args, message] of cases) {
      const run = await admin(args);
      expect(run.code).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(message);
      expect(run.stdout).toBe('');
    }
    // A host that is another community's alias (as 127.0.0.1 is the seeded localhost's) is not taken over.
    expect(await admin(['create-community', '--host', 'home.example'])).toMatchObject({ code: 0 });
    await pair.writer.query("insert into community_host_aliases (host, community_id) select 'alias.example', id from communities where host = 'home.example'");
    const taken = await admin(['create-community', '--host', 'alias.example']);
    expect(taken.code).toBe(2);
    expect(taken.stderr.split('\n')[0]).toMatch(/^admin: host alias\.example already belongs to the community of home\.example \([0-9a-f-]{36}\): one host belongs to one community; to move it .*: create-community --host alias\.example --move$/);
    expect(await pair.both("select count(*)::int as n from communities where host = 'alias.example'", [], (r) => r[0].n)).toEqual([0, 0]);
    // Moving it is explicit, said before it is done, and leaves the host with the new community alone.
    const moved = await admin(['create-community', '--host', 'alias.example', '--move']);
    expect(moved).toMatchObject({ code: 0 });
    expect(moved.stderr).toMatch(/^admin: moving host alias\.example from the community of home\.example \([0-9a-f-]{36}\) to a new community\n/);
    expect(await pair.both("select (select count(*)::int from communities where host = 'alias.example') as own, (select count(*)::int from community_host_aliases where host = 'alias.example') as alias", [], (r) => r[0])).toEqual([
      { own: 1, alias: 0 },
      { own: 1, alias: 0 },
    ]);
    // --move belongs to create-community only.
    expect((await admin(['list-members', '--move'])).stderr.split('\n')[0]).toBe('admin: --move does not apply to list-members');
    // Creating a community that exists under its own host again changes nothing and succeeds.
    expect(await admin(['create-community', '--host', 'home.example'])).toMatchObject({ code: 0 });
    // No DATABASE_URL and no `npm start` relay running in this checkout: told both ways out.
    expect((await admin(['list-members'], { DATABASE_URL: '' })).stderr).toBe(
      'admin: DATABASE_URL is not set and no relay started by `npm start` (without DATABASE_URL) is running in this checkout: start one with `npm start`, or set DATABASE_URL to the writer your relay uses\n',
    );
    // Help needs no database, and exits 0.
    for (const asked of [['help'], ['--help'], ['add-member', '-h']]) {
      const help = await admin(asked, { DATABASE_URL: '' });
      expect([help.code, help.stderr]).toEqual([0, '']);
      expect(help.stdout).toMatch(/^usage: npm run admin -- <command> \[options\]\n[\s\S]*set-role <npub\|hex> --role member\|admin/);
    }
    expect(await roleIn('team.example', alice.pubkey)).toEqual(['member', 'member']);
  }, CLI_TEST_MS);
});
