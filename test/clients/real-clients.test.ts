/**
 * Clients as they are (issue 18, item 6): real client libraries, configured the way their users
 * configure them, against the built relay on the real writer + replica pair. Each scenario runs in
 * its own `node` process (the libraries are ESM; see test/clients/*.mjs) and prints what its client
 * saw as JSON. The client subscribes to a private channel it is a member of and publishes to it
 * right after connecting, before its AUTH lands; then another member publishes from its own
 * connection. The client must get the stored history, an OK for its own message, and the other
 * member's message live, with no CLOSED. Each library runs several times: before the AUTH hold,
 * SimplePool lost its subscription in 3 runs out of 5.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { bytesToHex } from 'nostr-tools/utils';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const RUNS = 5;
const SCENARIO_TIMEOUT_MS = 15_000;
const HERE = import.meta.dirname;

interface ScenarioReport {
  history: string[];
  live: string[];
  eose: boolean;
  closed: string[];
  published: Record<string, { ok: boolean; reason?: string }>;
  ids: Record<string, string>;
  errors: string[];
  marks: Record<string, number>;
}

let fixture: RelayFixture;
let admin: RawClient;
const owner = newIdentity();
const channel = randomUUID();
let historyId: string;

beforeAll(async () => {
  // Relay defaults, except a looser per-minute EVENT quota: the runs reuse two members' keys.
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
  admin = await RawClient.authed(fixture.relay.wsUrl, owner);
  expect(await admin.publish(owner.sign({ kind: 9007, tags: [['h', channel], ['name', 'clients'], ['visibility', 'private']] }))).toEqual([true, '']);
  const history = owner.sign({ kind: 9, content: 'stored before the client connects', tags: [['h', channel]] });
  expect(await admin.publish(history)).toEqual([true, '']);
  historyId = history.id;
});

afterAll(async () => {
  admin?.close();
  await fixture?.close();
});

function runScenario(script: string, input: object): Promise<{ report: ScenarioReport | undefined; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(HERE, script), JSON.stringify(input)], { timeout: SCENARIO_TIMEOUT_MS * 2 }, (_err, stdout, stderr) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      let report: ScenarioReport | undefined;
      try {
        report = JSON.parse(line) as ScenarioReport;
      } catch {
        report = undefined;
      }
      resolve({ report, stdout, stderr });
    });
  });
}

async function stored(id: string): Promise<boolean> {
  const { rows } = await fixture.writer.query(`select 1 from events where id = decode($1, 'hex')`, [id]);
  return rows.length === 1;
}

/** Two new members of the private channel: the library's user and the peer that publishes live. */
async function members(): Promise<{ sk: string; peerSk: string }> {
  const user = newIdentity();
  const peer = newIdentity();
  for (const who of [user, peer]) expect(await admin.publish(owner.sign({ kind: 9000, tags: [['h', channel], ['p', who.pubkey]] }))).toEqual([true, '']);
  return { sk: bytesToHex(user.sk), peerSk: bytesToHex(peer.sk) };
}

describe.each([
  ['nostr-tools Relay (onauth before connect)', 'nostr-tools-relay.mjs'],
  ['nostr-tools SimplePool (automaticallyAuth)', 'nostr-tools-pool.mjs'],
  ['NDK 3 (signIn auth policy)', 'ndk.mjs'],
  ['applesauce (Relay + PrivateKeySigner)', 'applesauce.mjs'],
])('%s', (_name, script) => {
  it(`subscribes and publishes on connect: history, its OK and the live message, ${RUNS} runs out of ${RUNS}`, async () => {
    const keys = await members();
    const outcomes: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const { report, stdout, stderr } = await runScenario(script, { url: fixture.relay.wsUrl, channel, timeoutMs: SCENARIO_TIMEOUT_MS, ...keys });
      if (!report) {
        outcomes.push(`run ${run}: no report; stdout ${stdout.slice(0, 500)} stderr ${stderr.slice(0, 1000)}`);
        continue;
      }
      const problems = [
        ...report.errors,
        ...report.closed.map((r) => `CLOSED ${r}`),
        ...(report.history.includes(historyId) ? [] : ['history missing']),
        ...(report.live.includes(report.ids.peer) ? [] : ['live message missing']),
        ...Object.entries(report.published)
          .filter(([, p]) => !p.ok)
          .map(([label, p]) => `${label} publish refused: ${p.reason}`),
        ...((await stored(report.ids.onConnect)) ? [] : ['own message not stored']),
      ];
      outcomes.push(problems.length === 0 ? 'ok' : `run ${run}: ${problems.join('; ')} (ms: ${JSON.stringify(report.marks)})`);
    }
    expect(outcomes).toEqual(Array(RUNS).fill('ok'));
  }, RUNS * SCENARIO_TIMEOUT_MS * 2);
});
