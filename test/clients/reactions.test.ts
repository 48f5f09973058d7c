/**
 * Reactions as client libraries build them (issue 29): nostr-tools `nip25.finishReactionEvent`
 * tags the target with `e` and `p` and adds no `h`. The relay stores the reaction in its target's
 * channel, so a channel's `#h` subscription gets it live and a `#h` history read finds it; the
 * stored event stays as signed (still no `h`). The library publishes from its own `node` process,
 * as its users run it (test/clients/nostr-tools-reaction.mjs), and reads it back by `#e`.
 *
 * The `#h` side is checked on the wire, by a plain client: nostr-tools' `Relay` drops an event
 * that does not match its own subscription's filters, and a reaction without `h` never matches a
 * `#h` filter there, whatever the relay sends. A nostr-tools user who wants a channel's reactions
 * in one `#h` subscription adds the `h` tag to the template (docs/moderation.md).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { bytesToHex } from 'nostr-tools/utils';
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';

const RUNS = 3;
const TIMEOUT_MS = 15_000;

interface Report {
  seen: string[];
  closed: string[];
  published: unknown;
  id?: string;
  hasH?: boolean;
  errors: string[];
}

let fixture: RelayFixture;
let admin: RawClient;
const owner = newIdentity();
const channel = randomUUID();

beforeAll(async () => {
  fixture = await startRelayFixture({ BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '1000' });
  admin = await RawClient.authed(fixture.relay.wsUrl, owner);
  expect(await admin.publish(owner.sign({ kind: 9007, tags: [['h', channel], ['name', 'reactions'], ['visibility', 'private']] }))).toEqual([true, '']);
});

afterAll(async () => {
  admin?.close();
  await fixture?.close();
});

function run(input: object): Promise<Report | string> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(import.meta.dirname, 'nostr-tools-reaction.mjs'), JSON.stringify(input)], { timeout: TIMEOUT_MS * 2 }, (_err, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Report);
      } catch {
        resolve(`no report: ${stdout.slice(0, 300)} ${stderr.slice(0, 600)}`);
      }
    });
  });
}

it(`a nostr-tools reaction (no h tag) reaches #h subscribers live and #h history, ${RUNS} runs of ${RUNS}`, async () => {
  const outcomes: unknown[] = [];
  for (let i = 0; i < RUNS; i++) {
    const user = newIdentity();
    expect(await admin.publish(owner.sign({ kind: 9000, tags: [['h', channel], ['p', user.pubkey]] }))).toEqual([true, '']);
    const target = owner.sign({ kind: 9, content: `react to me ${randomUUID()}`, tags: [['h', channel]] });
    expect(await admin.publish(target)).toEqual([true, '']);
    const watcher = await RawClient.authed(fixture.relay.wsUrl, owner);
    const subscribed = await watcher.req('channel', { kinds: [7], '#h': [channel] });
    const report = await run({ url: fixture.relay.wsUrl, sk: bytesToHex(user.sk), channel, target, timeoutMs: TIMEOUT_MS });
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
  const { rows } = await fixture.writer.query<{ n: number }>(`select count(*)::int as n from events where kind = 7 and channel_id = $1 and not tags @> '[["h"]]'`, [channel]);
  expect(rows[0].n).toBe(RUNS);
}, RUNS * TIMEOUT_MS * 2);
