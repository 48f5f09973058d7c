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
import { randomUUID } from 'node:crypto';
import type { VerifiedEvent } from 'nostr-tools/pure';
import { Identity, newIdentity, nip98Header, RawClient, wire } from '../harness/nostr-clients.js';
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

/**
 * What a timeout blocks (docs/moderation.md, relay.md §5.2 step 8): every write but the commands
 * and reports that run before the gate. The author is the session's authenticated key: a gift wrap
 * (1059), signed by a throwaway key, is the session's write and is refused like any other.
 */
describe('a timeout blocks every write kind of the timed-out session', () => {
  const carol = newIdentity();
  const tim = newIdentity();
  let t: RawClient;
  let until: number;
  let openChannel: string;
  let own: VerifiedEvent;
  let theirs: VerifiedEvent;

  beforeAll(async () => {
    const c = await session.connect(carol);
    openChannel = randomUUID();
    expect(await c.publish(carol.sign({ kind: 9007, tags: [['h', openChannel], ['name', 'open'], ['visibility', 'open']] }))).toEqual([true, '']);
    theirs = carol.sign({ kind: 9, content: 'carol', tags: [['h', openChannel]] });
    expect(await c.publish(theirs)).toEqual([true, '']);
    t = await session.connect(tim);
    own = tim.sign({ kind: 9, content: 'before', tags: [['h', openChannel]] });
    expect(await t.publish(own)).toEqual([true, '']);
    until = await timeOut(tim);
  });

  it('refuses a gift wrap sent on the timed-out session, whatever key signed the wrap', async () => {
    const wrap = newIdentity().sign({ kind: 1059, tags: [['p', carol.pubkey]], content: 'sealed' });
    expect(await t.publish(wrap)).toEqual([false, `restricted: you are timed out until ${until}`]);
    expect(await stored(wrap.id)).toBe(false);
  });

  it('refuses every other kind a member writes, on the socket and over POST /events', async () => {
    const attempts: VerifiedEvent[] = [
      tim.sign({ kind: 0, content: '{}' }),
      tim.sign({ kind: 1, content: 'note' }),
      tim.sign({ kind: 9, content: 'message', tags: [['h', openChannel]] }),
      tim.sign({ kind: 9, content: 'reply', tags: [['h', openChannel], ['e', theirs.id, '', 'reply']] }),
      tim.sign({ kind: 7, content: '+', tags: [['e', theirs.id]] }),
      tim.sign({ kind: 5, tags: [['e', own.id]] }),
      tim.sign({ kind: 40003, content: 'edited', tags: [['h', openChannel], ['e', own.id]] }),
      tim.sign({ kind: 9007, tags: [['h', randomUUID()], ['name', 'mine']] }),
      tim.sign({ kind: 9021, tags: [['h', openChannel]] }),
      tim.sign({ kind: 9022, tags: [['h', openChannel]] }),
      tim.sign({ kind: 20002, tags: [['h', openChannel]] }),
    ];
    for (const ev of attempts) {
      expect([ev.kind, await t.publish(ev)]).toEqual([ev.kind, [false, `restricted: you are timed out until ${until}`]]);
      expect(await stored(ev.id)).toBe(false);
    }
    const note = tim.sign({ kind: 1, content: 'over http' });
    const body = JSON.stringify(note);
    const url = `${fixture.relay.httpUrl}/events`;
    const res = await fetch(url, { method: 'POST', headers: { authorization: nip98Header(tim, url, body, undefined, true) }, body });
    expect([res.status, await res.json()]).toEqual([403, { error: `restricted: you are timed out until ${until}` }]);
    expect(await stored(note.id)).toBe(false);
    expect(await deletedAt(own.id)).toBeNull();
  });

  it('still takes the writes that run before the gate: a report', async () => {
    const report = tim.sign({ kind: 1984, content: 'spam', tags: [['p', carol.pubkey], ['e', theirs.id, 'spam']] });
    expect(await t.publish(report)).toEqual([true, '']);
  });
});

describe('a banned session that the pod has not closed yet', () => {
  it('is blocked on a gift wrap signed by any key', async () => {
    const mallory = newIdentity();
    const m = await connectThenBan(mallory);
    const wrap = newIdentity().sign({ kind: 1059, tags: [['p', newIdentity().pubkey]], content: 'sealed' });
    expect(await m.publish(wrap)).toEqual([false, BANNED]);
    expect(await stored(wrap.id)).toBe(false);
  });
});

async function deletedAt(id: string): Promise<Date | null> {
  const { rows } = await fixture.writer.query<{ deleted_at: Date | null }>('select deleted_at from events where id = $1', [Buffer.from(id, 'hex')]);
  return rows[0].deleted_at;
}
