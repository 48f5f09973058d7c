/**
 * The moderation gate's place in the EVENT pipeline (relay.md §5.2), on the real writer + replica
 * pair. Ingest looks the author's ban and timeout up while the signature is checked (issue 17),
 * but answers as if it looked after: an event that fails the signature, the limits or the kind
 * check is refused for that reason even from a banned author; a valid one is `blocked:`; a
 * timed-out author's is `restricted:`. A timed-out moderator's commands run (moderation-commands).
 *
 * An EVENT from a banned key can reach ingest only on a socket the pod has not yet closed. Here the
 * bans are written on the writer with the `buzz_bans` notification trigger disabled and the
 * periodic re-check far beyond the test, so the pod never hears of them: the socket stays open and
 * the ingest gate, which reads the writer, is the one that answers.
 */
import type { VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, RawClient, wire } from '../harness/nostr-clients.js';
import { RelayFixture, startRelayFixture } from '../harness/relay-fixture.js';
import { CommandSession, nowSecs } from './command-session.js';

const BANNED = 'blocked: you are banned from this community';

let fixture: RelayFixture;
let session: CommandSession;

beforeAll(async () => {
  fixture = await startRelayFixture({
    BUZZ_BAN_RECHECK_MS: '3600000',
    BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '200',
    BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '10000',
  });
  await fixture.writer.query('alter table bans disable trigger bans_notify');
  session = new CommandSession(() => fixture.relay.wsUrl);
});

afterAll(async () => {
  session?.closeAll();
  await fixture?.close();
});

async function ban(id: Identity): Promise<void> {
  await fixture.writer.query(`insert into bans (community_id, pubkey) select id, $1 from communities where host = 'localhost'`, [id.pubkey]);
}

/** Times `id` out for an hour; resolves to the `until` the relay answers with, in epoch seconds. */
async function timeOut(id: Identity): Promise<number> {
  const { rows } = await fixture.writer.query<{ until: string }>(
    `insert into timeouts (community_id, pubkey, until) select id, $1, now() + interval '1 hour' from communities where host = 'localhost'
     returning extract(epoch from until)::bigint as until`,
    [id.pubkey],
  );
  return Number(rows[0].until);
}

async function stored(id: string): Promise<boolean> {
  const { rowCount } = await fixture.writer.query('select 1 from events where id = $1', [Buffer.from(id, 'hex')]);
  return (rowCount ?? 0) > 0;
}

function badSignature(ev: VerifiedEvent): VerifiedEvent {
  const w = wire(ev);
  return { ...w, sig: w.sig.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
}

/** A socket for `id`, opened before its ban or timeout (the pod lets it stay open). */
async function connectThenBan(id: Identity): Promise<RawClient> {
  const c = await session.connect(id);
  await ban(id);
  return c;
}

describe('a banned author', () => {
  it('is answered on a bad signature, bad limits and an unknown kind before the ban', async () => {
    const mallory = newIdentity();
    const m = await connectThenBan(mallory);
    const forged = badSignature(mallory.sign({ kind: 1, content: 'forged' }));
    expect(await m.publish(forged)).toEqual([false, 'invalid: bad signature']);
    const stale = mallory.sign({ kind: 1, content: 'stale', created_at: nowSecs() - 901 });
    expect(await m.publish(stale)).toEqual([false, 'invalid: event timestamp too far from server time']);
    const unknown = mallory.sign({ kind: 12345, content: 'mystery' });
    expect(await m.publish(unknown)).toEqual([false, 'restricted: unknown event kind']);
    for (const ev of [forged, stale, unknown]) expect(await stored(ev.id)).toBe(false);
  });

  it('is blocked on a valid event, and nothing is stored; the socket is still open', async () => {
    const mallory = newIdentity();
    const m = await connectThenBan(mallory);
    const note = mallory.sign({ kind: 1, content: 'banned' });
    expect(await m.publish(note)).toEqual([false, BANNED]);
    expect(await stored(note.id)).toBe(false);
    expect(m.closed).toBeUndefined();
  });

  it('is blocked as the key of a gift wrap sent on another socket (looked up at the gate)', async () => {
    const mallory = newIdentity();
    await ban(mallory);
    const carrier = await session.connect(newIdentity());
    const wrap = mallory.sign({ kind: 1059, tags: [['p', newIdentity().pubkey]], content: 'sealed' });
    expect(await carrier.publish(wrap)).toEqual([false, BANNED]);
    expect(await stored(wrap.id)).toBe(false);
  });
});

describe('a timed-out author', () => {
  it('is refused `restricted:` with the end of its timeout on a valid event, and answered on a bad signature first', async () => {
    const tim = newIdentity();
    const t = await session.connect(tim);
    const until = await timeOut(tim);
    expect(await t.publish(badSignature(tim.sign({ kind: 1, content: 'forged' })))).toEqual([false, 'invalid: bad signature']);
    const note = tim.sign({ kind: 1, content: 'muted' });
    expect(await t.publish(note)).toEqual([false, `restricted: you are timed out until ${until}`]);
    expect(await stored(note.id)).toBe(false);
  });
});
