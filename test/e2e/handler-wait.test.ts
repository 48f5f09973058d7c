/**
 * A REQ that finds the handler budget (BUZZ_MAX_CONCURRENT_HANDLERS) full waits its turn instead
 * of being refused (docs/operator.md, BUZZ_MAX_CONCURRENT_HANDLERS), through the built relay on a
 * real writer and streaming replica: a crowd of clients that each ask for history at once, far
 * more than the budget, all get their history and EOSE; a COUNT beyond the budget is still
 * refused at once.
 */
import { newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { metricSum } from '../harness/relay-metrics.js';

const CLIENTS = 30;

let db: TestDatabase;
let relay: RelayProcess;
const clients: RawClient[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await startRelay(relayEnv(db, { BUZZ_MAX_CONCURRENT_HANDLERS: '8' }));
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.ws.terminate();
  await relay?.stop();
  await db?.drop();
});

it('serves every REQ of a crowd far larger than the budget, each with its EOSE', async () => {
  const ids = Array.from({ length: CLIENTS }, () => newIdentity());
  const crowd = await Promise.all(ids.map((id) => RawClient.authed(relay.wsUrl, id)));
  clients.push(...crowd);
  // Every REQ in the same instant: with a budget of 8, most find it full (and fewer than
  // HANDLER_WAITING_PER_SLOT × 8 wait).
  for (const c of crowd) c.send(['REQ', 'h', { kinds: [1], limit: 20 }]);
  const ends = await Promise.all(crowd.map((c) => c.waitFor((f) => f[1] === 'h' && (f[0] === 'EOSE' || f[0] === 'CLOSED'), 20_000)));
  expect(ends.map((f) => f.slice(0, 3).join(' '))).toEqual(crowd.map(() => 'EOSE h'));
  expect(await metricSum(relay.metricsUrl, 'buzz_ws_handler_refusals_total')).toBe(0);
  expect(await metricSum(relay.metricsUrl, 'buzz_ws_handler_waiting')).toBe(0);
}, 60_000);
