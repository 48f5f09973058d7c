/**
 * The AUTH deadline measures the client, not the relay (issue 17, item 4), on the built relay and
 * the real writer + replica pair. Verification is made slow for real: a transaction holds the
 * `bans` table in ACCESS EXCLUSIVE mode, so the AUTH ban lookup waits on the lock (the relays run
 * with a 20 s lock_timeout, so the wait outlives the 5 s deadline without failing).
 *
 * - A client that sent AUTH in time is not closed while the relay is still verifying it, and is
 *   authenticated once the lock goes; a client that never sends AUTH is still closed (and only
 *   it counts in buzz_ws_auth_timeouts_total).
 * - The relay's own bound (BUZZ_AUTH_VERIFY_TIMEOUT_MS, 1 s on the second relay) ends a
 *   verification that does not finish: the client gets OK false with a retryable `error:` and the
 *   socket closes; the relay authenticates new clients once the lock goes.
 */
import { finalizeEvent } from 'nostr-tools/pure';
import type { PoolClient } from 'pg';
import { AUTH_DEADLINE_MS } from '../../src/subscriptions/relay.gateway.js';
import { eventually } from '../harness/eventually.js';
import { authTemplate, newIdentity, RawClient } from '../harness/nostr-clients.js';
import { relayEnv, RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

const SLOW_LOCKS = { BUZZ_DB_LOCK_TIMEOUT_MS: '20000' };

let fixture: RelayFixture;
let bounded: RelayProcess;
const clients: RawClient[] = [];

beforeAll(async () => {
  fixture = await startRelayFixture(SLOW_LOCKS);
  bounded = await startRelay(relayEnv(fixture.db, { ...SLOW_LOCKS, BUZZ_AUTH_VERIFY_TIMEOUT_MS: '1000' }));
});

afterAll(async () => {
  for (const c of clients) c.close();
  await bounded?.stop();
  await fixture?.close();
});

async function connect(relay: RelayProcess): Promise<RawClient> {
  const c = await RawClient.connect(relay.wsUrl);
  clients.push(c);
  return c;
}

/** Sends a valid AUTH for the challenge without waiting for the answer; returns its event id. */
function sendAuth(c: RawClient, relay: RelayProcess): string {
  const auth = finalizeEvent(authTemplate(c.challenge, relay.wsUrl), newIdentity().sk);
  c.send(['AUTH', auth]);
  return auth.id;
}

/** A transaction holding `bans` in ACCESS EXCLUSIVE mode; `unlock` (idempotent) commits it. */
async function lockBans(): Promise<{ unlock(): Promise<void> }> {
  const holder: PoolClient = await fixture.writer.connect();
  await holder.query('begin');
  await holder.query('lock table bans in access exclusive mode');
  let done = false;
  return {
    unlock: async () => {
      if (done) return;
      done = true;
      await holder.query('commit');
      holder.release();
    },
  };
}

/** Resolves once a statement waits for the lock on `bans`: the relay's verification is stuck there. */
function banLookupWaiting(): Promise<void> {
  return eventually('an AUTH ban lookup waiting on the lock', async () => {
    const { rows } = await fixture.writer.query<{ n: number }>(`select count(*)::int as n from pg_locks where not granted and relation = 'bans'::regclass`);
    return rows[0].n > 0;
  });
}

async function authTimeouts(relay: RelayProcess): Promise<number> {
  const text = await (await fetch(relay.metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith('buzz_ws_auth_timeouts_total '));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

it('keeps a client whose AUTH arrived in time while verification is slow, and still closes one that never sent AUTH', async () => {
  const relay = fixture.relay;
  const timeoutsBefore = await authTimeouts(relay);
  const lock = await lockBans();
  try {
    const patient = await connect(relay);
    const answered = sendAuth(patient, relay);
    // Sent while its AUTH is being verified: it waits for the outcome, past the grace and the deadline.
    patient.send(['REQ', 'held', { kinds: [1], limit: 1 }]);
    await banLookupWaiting();
    // Connected after `patient`: once its deadline has closed it, `patient`'s deadline has passed too.
    const silent = await connect(relay);
    expect(await silent.waitClosed(AUTH_DEADLINE_MS + 5000)).toBeDefined();
    expect(patient.closed).toBeUndefined();
    expect(patient.frames.filter((f) => f[0] === 'OK')).toEqual([]);

    await lock.unlock();
    expect(await patient.waitFor((f) => f[0] === 'OK' && f[1] === answered, 10_000)).toEqual(['OK', answered, true, '']);
    expect(await patient.waitFor((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === 'held')).toEqual(['EOSE', 'held']);
    expect((await patient.req('after', { kinds: [1], limit: 1 })).end).toEqual(['EOSE', 'after']);
    expect(patient.closed).toBeUndefined();
  } finally {
    await lock.unlock();
  }
  expect((await authTimeouts(relay)) - timeoutsBefore).toBe(1);
}, 30_000);

it('ends a verification that outlives the relay bound with OK false "error: …" and a close; the relay recovers', async () => {
  const lock = await lockBans();
  try {
    const stuck = await connect(bounded);
    const id = sendAuth(stuck, bounded);
    expect(await stuck.waitFor((f) => f[0] === 'OK' && f[1] === id, 10_000)).toEqual(['OK', id, false, 'error: authentication not verified in time; reconnect and retry']);
    await stuck.waitClosed();
  } finally {
    await lock.unlock();
  }
  const later = await RawClient.authed(bounded.wsUrl, newIdentity());
  clients.push(later);
  expect((await later.req('ok', { kinds: [1], limit: 1 })).end).toEqual(['EOSE', 'ok']);
}, 30_000);
