/**
 * The long-thread seeder (relay.md §8, seed 002) run as an operator runs it, the built
 * `dist/scripts/seed-long-thread.js`, against a relay child process on the real pair.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Pool } from 'pg';
import { ClientKey } from '../../src/client/client-key.js';
import { NostrEvent } from '../../src/nostr/nostr.types.js';
import { PacedPublisher, SeedRefusedError } from '../../scripts/lib/paced-publisher.js';
import { loopbackRelayUrl, parseSeedOptions, SeedUsageError } from '../../scripts/lib/seed-options.js';
import { createTestDatabase, TestDatabase } from '../harness/test-database.js';
import { RelayProcess, startRelay } from '../harness/relay-process.js';

const SEEDER = path.resolve(import.meta.dirname, '../../dist/scripts/seed-long-thread.js');
/** Hooks and tests that start a relay or run the seeder (each run stays well under this). */
const SLOW_MS = 30_000;

/** Credentials a developer's shell may carry: the seeder must neither use nor follow them. */
const AMBIENT = {
  BUZZ_RELAY_URL: 'ws://relay.example.com',
  BUZZ_PRIVATE_KEY: '2'.repeat(64),
  BUZZ_RELAY_PRIVATE_KEY: '1'.repeat(64),
  BUZZ_AUTH_TAG: 'secret-tag',
};

interface SeedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  values: Record<string, string>;
}

function runSeeder(args: string[], env: Record<string, string>): Promise<SeedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SEEDER, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    const guard = setTimeout(() => child.kill('SIGKILL'), 25_000); // a hang becomes a failure with output
    child.on('exit', (code) => {
      clearTimeout(guard);
      const values = Object.fromEntries([...stdout.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
      resolve({ code, stdout, stderr, values });
    });
  });
}

let db: TestDatabase;
let writer: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  writer = new Pool({ connectionString: db.writerUrl, max: 2 });
}, SLOW_MS);

afterAll(async () => {
  await writer?.end();
  await db?.drop();
});

async function threadCounts(root: string): Promise<{ reply_count: number; descendant_count: number } | undefined> {
  const { rows } = await writer.query('select reply_count, descendant_count from thread_metadata where event_id = $1', [Buffer.from(root, 'hex')]);
  return rows[0];
}

async function reactionCount(channel: string): Promise<number> {
  const { rows } = await writer.query<{ n: number }>('select count(*)::int as n from events where channel_id = $1 and kind = 7', [channel]);
  return rows[0].n;
}

describe('seeding a relay with raised limits', () => {
  let relay: RelayProcess;

  beforeAll(async () => {
    relay = await startRelay({
      DATABASE_URL: db.writerUrl,
      READ_DATABASE_URL: db.readerUrl,
      BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
      BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
      BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '100000',
    });
  }, SLOW_MS);

  afterAll(async () => {
    await relay?.stop();
  }, SLOW_MS);

  it('posts one root, 40 replies and reactions with a throwaway key, ignoring ambient BUZZ_* settings', async () => {
    const run = await runSeeder(['40', '--rate', '100000'], { ...AMBIENT, RELAY_URL: relay.wsUrl });
    expect(run.stderr).not.toMatch(/failed/);
    expect(run.code).toBe(0);
    expect(run.values).toMatchObject({ replies: '40', reactions: '20' });
    expect(run.values.root).toMatch(/^[0-9a-f]{64}$/);
    expect(run.values.channel).toMatch(/^[0-9a-f-]{36}$/);

    expect(await threadCounts(run.values.root)).toEqual({ reply_count: 40, descendant_count: 40 });
    expect(await reactionCount(run.values.channel)).toBe(20);
    const { rows } = await writer.query<{ pubkey: string; n: number }>(
      `select encode(pubkey, 'hex') as pubkey, count(*)::int as n from events
        where channel_id = $1 and kind not between 39000 and 39003 group by pubkey`,
      [run.values.channel],
    );
    // One signer for the whole run (the relay signs the channel's NIP-29 state), and not one of the ambient keys.
    expect(rows).toHaveLength(1);
    expect(rows[0].n).toBe(1 + 1 + 40 + 20); // kind 9007, root, replies, reactions
    const ambientPubkeys = [AMBIENT.BUZZ_PRIVATE_KEY, AMBIENT.BUZZ_RELAY_PRIVATE_KEY].map((sk) => new ClientKey(sk).pubkey);
    expect(ambientPubkeys).not.toContain(rows[0].pubkey);
  }, SLOW_MS);

  it('uses a fresh key on every run', async () => {
    const [a, b] = await Promise.all([
      runSeeder(['1', '--rate', '100000', '--reactions', '0'], { RELAY_URL: relay.wsUrl }),
      runSeeder(['1', '--rate', '100000', '--reactions', '0'], { RELAY_URL: relay.wsUrl }),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const { rows } = await writer.query<{ pubkey: string }>(`select distinct encode(pubkey, 'hex') as pubkey from events where id = any($1::bytea[])`, [
      [Buffer.from(a.values.root, 'hex'), Buffer.from(b.values.root, 'hex')],
    ]);
    expect(rows).toHaveLength(2);
  }, SLOW_MS);
});

describe('pacing to a relay quota', () => {
  let relay: RelayProcess;

  beforeAll(async () => {
    relay = await startRelay({
      DATABASE_URL: db.writerUrl,
      READ_DATABASE_URL: db.readerUrl,
      BUZZ_DEFAULT_COMMUNITY_HOSTS: 'localhost,127.0.0.1',
      BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN: '100000',
      BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '4',
      // No connect-time burst: the seeder's first writes already meet the quota.
      BUZZ_RATE_LIMIT_HUMAN_WS_BURST: '4',
    });
  }, SLOW_MS);

  afterAll(async () => {
    await relay?.stop();
  }, SLOW_MS);

  it('retries a "rate-limited: quota exceeded; retry in 1s" answer after the hinted delay', async () => {
    const started = Date.now();
    const run = await runSeeder(['6', '--rate', '100000', '--reactions', '2'], { RELAY_URL: relay.wsUrl });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('rate-limited: quota exceeded; retry in 1s');
    expect(run.stderr).toMatch(/retrying in 1\.05 s/);
    // 10 writes at 4 per second: at least two full refill waits.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(await threadCounts(run.values.root)).toEqual({ reply_count: 6, descendant_count: 6 });
    expect(await reactionCount(run.values.channel)).toBe(2);
  }, SLOW_MS);
});

describe('refusals', () => {
  it.each(['ws://example.com:3000', 'wss://relay.buzz.example', 'ws://localhost.evil.example', 'ws://localhost@evil.example', 'ws://10.0.0.1:3000', 'http://localhost:3000'])(
    'refuses %s before connecting',
    (url) => {
      expect(() => loopbackRelayUrl(url)).toThrow(SeedUsageError);
    },
  );

  it.each(['ws://localhost:3000', 'ws://127.0.0.1:3000', 'wss://[::1]:8443', 'ws://LOCALHOST'])('accepts %s', (url) => {
    expect(() => loopbackRelayUrl(url)).not.toThrow();
  });

  it('exits 2 with a clear error for a non-loopback relay, even one named only in RELAY_URL', async () => {
    const run = await runSeeder(['3'], { ...AMBIENT, RELAY_URL: 'ws://relay.example.com:3000' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('refusing non-loopback relay host "relay.example.com"');
    expect(run.stdout).toBe('');
  }, SLOW_MS);

  it('prefers SEED_RELAY_URL over RELAY_URL and reads no BUZZ_* variable', () => {
    const opts = parseSeedOptions([], { ...AMBIENT, SEED_RELAY_URL: 'ws://127.0.0.1:4000', RELAY_URL: 'ws://localhost:3000' });
    expect(opts).toEqual({ relayUrl: 'ws://127.0.0.1:4000/', replies: 187, reactions: 20, delaySecs: 1.05, channel: undefined, secretKey: undefined });
    expect(parseSeedOptions([], AMBIENT).relayUrl).toBe('ws://localhost:3000/');
  });

  it("reads seed 002's knobs SEED_REACTIONS, SEED_DELAY and SEED_CHANNEL; the flags are aliases and win", () => {
    const channel = '0b9d3a4e-8f1c-4c2e-9a57-3f5d2b1c0e11';
    const env = { ...AMBIENT, SEED_REACTIONS: '5', SEED_DELAY: '0', SEED_CHANNEL: channel };
    expect(parseSeedOptions(['10'], env)).toMatchObject({ replies: 10, reactions: 5, delaySecs: 0, channel });
    expect(parseSeedOptions(['10'], { ...env, SEED_DELAY: '2.5' }).delaySecs).toBe(2.5);
    const other = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
    expect(parseSeedOptions(['10', '--reactions', '7', '--rate', '120', '--channel', other], env)).toMatchObject({ reactions: 7, delaySecs: 0.525, channel: other });
    expect(() => parseSeedOptions([], { SEED_DELAY: '-1' })).toThrow('SEED_DELAY must be a number of seconds');
    expect(() => parseSeedOptions([], { SEED_DELAY: 'soon' })).toThrow('SEED_DELAY must be a number of seconds');
    expect(() => parseSeedOptions([], { SEED_REACTIONS: 'many' })).toThrow('SEED_REACTIONS must be an integer');
    expect(() => parseSeedOptions([], { SEED_CHANNEL: 'general' })).toThrow('SEED_CHANNEL must be a channel uuid');
  });

  it('takes RELAY_URL from ./.env when the environment has none, and still refuses a non-loopback one', () => {
    const dotenv = '# dev relay\nRELAY_URL="ws://127.0.0.1:3999"\nBUZZ_PRIVATE_KEY=' + 'ab'.repeat(32) + '\n';
    expect(parseSeedOptions([], AMBIENT, dotenv)).toMatchObject({ relayUrl: 'ws://127.0.0.1:3999/', secretKey: undefined });
    expect(parseSeedOptions([], { ...AMBIENT, RELAY_URL: 'ws://localhost:4001' }, dotenv).relayUrl).toBe('ws://localhost:4001/');
    expect(parseSeedOptions([], { ...AMBIENT, SEED_RELAY_URL: 'ws://[::1]:4002' }, dotenv).relayUrl).toBe('ws://[::1]:4002/');
    expect(() => parseSeedOptions([], AMBIENT, 'RELAY_URL=wss://relay.example.com\n')).toThrow('refusing non-loopback relay host "relay.example.com"');
  });

  it('rejects bad arguments with exit code 2', async () => {
    expect(() => parseSeedOptions(['abc'], {})).toThrow('replies must be an integer');
    expect(() => parseSeedOptions(['--rate', '0'], {})).toThrow('--rate must be an integer');
    expect(() => parseSeedOptions(['--bogus'], {})).toThrow('unknown option --bogus');
    const run = await runSeeder(['--rate'], {});
    expect(run.code).toBe(2);
  }, SLOW_MS);
});

describe('pacing arithmetic (fake clock)', () => {
  /** A relay stand-in answering each publish from a script; the clock only moves when the publisher sleeps. */
  function harness(answers: string[]) {
    let now = 1_000_000;
    const sentAt: number[] = [];
    const client = {
      publish: async () => {
        sentAt.push(now);
        const message = answers.shift() ?? '';
        return { ok: message === '', message };
      },
    };
    const logs: string[] = [];
    const clock = { now: () => now, sleep: async (ms: number) => void (now += ms) };
    return { client, clock, sentAt, logs, log: (l: string) => logs.push(l) };
  }
  const ev = { id: 'a'.repeat(64) } as NostrEvent;

  it('spaces writes SEED_DELAY apart (1.05 s by default, the stock 60 per minute with 5 % headroom)', async () => {
    const h = harness([]);
    const out = new PacedPublisher(h.client, 1.05, h.log, h.clock);
    for (let i = 0; i < 4; i++) await out.publish(ev, `write ${i}`);
    expect(h.sentAt.map((t) => t - h.sentAt[0])).toEqual([0, 1050, 2100, 3150]);
  });

  it('retries a rate-limited answer after the hinted delay and keeps pacing from there', async () => {
    const h = harness(['', 'rate-limited: quota exceeded; retry in 3s', '']);
    const out = new PacedPublisher(h.client, 1.05, h.log, h.clock);
    await out.publish(ev, 'first');
    await out.publish(ev, 'second');
    await out.publish(ev, 'third');
    expect(h.sentAt.map((t) => t - h.sentAt[0])).toEqual([0, 1050, 1050 + 3050, 1050 + 3050 + 1050]);
    expect(out.retries).toBe(1);
    expect(h.logs).toEqual(['rate-limited: quota exceeded; retry in 3s (second); retrying in 3.05 s']);
  });

  it('accepts duplicate: as done and fails on any other refusal', async () => {
    const h = harness(['duplicate: already have this event', 'restricted: not a channel member']);
    const out = new PacedPublisher(h.client, 0.0006, h.log, h.clock);
    await out.publish(ev, 'dup');
    await expect(out.publish(ev, 'reply 1')).rejects.toThrow(SeedRefusedError);
    await expect(new PacedPublisher(harness([]).client, 1.05, h.log, h.clock).publish(ev, 'x')).resolves.toBeUndefined();
  });
});
