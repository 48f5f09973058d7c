/**
 * `npm run seed:long-thread -- [replies]` with `SEED_REACTIONS`, `SEED_DELAY`, `SEED_CHANNEL`,
 * `SEED_RELAY_URL` / `RELAY_URL` (also from `./.env`) and `SEED_PRIVATE_KEY`; the flags
 * `--reactions N`, `--rate N` and `--channel UUID` are aliases.
 *
 * Posts one long thread to a local relay for reproducing long-thread loading (seed 002,
 * relay.md §8): a new open stream channel (NIP-29 kind 9007, unless SEED_CHANNEL names one), a root
 * message (kind 9), `replies` replies (default 187) carrying a NIP-10 `e` root tag, and some 👍
 * reactions (kind 7) spread over replies `(i * 7) mod replies`.
 *
 * Safety rules: loopback relays only (anything else exits 2 before connecting), a throwaway key
 * per run (or SEED_PRIVATE_KEY), no ambient BUZZ_* variable is read (see lib/seed-options.ts),
 * and writes are spaced SEED_DELAY apart (1.05 s, under the stock quota) with `rate-limited:`
 * answers retried after the relay's hint. A default run takes about 3.5 minutes at the stock 60 messages per minute.
 *
 * Prints `channel=<uuid>`, `root=<event id>` and `replies=<n> reactions=<n>` on stdout; progress
 * and retries go to stderr. Exit codes: 0 done, 1 the relay refused or failed, 2 bad usage or
 * a refused relay URL.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BuzzClient } from '../src/client/buzz-client.js';
import { ClientKey } from '../src/client/client-key.js';
import { PacedPublisher } from './lib/paced-publisher.js';
import { parseSeedOptions, SeedOptions, SeedUsageError } from './lib/seed-options.js';

interface SeedResult {
  channel: string;
  root: string;
  replies: number;
  reactions: number;
}

const log = (line: string) => process.stderr.write(`seed-long-thread: ${line}\n`);

async function seed(opts: SeedOptions): Promise<SeedResult> {
  const key = opts.secretKey ? new ClientKey(opts.secretKey) : ClientKey.generate();
  const client = await BuzzClient.connect({ url: opts.relayUrl, secretKey: key });
  try {
    const out = new PacedPublisher(client, opts.delaySecs, log);
    log(`relay ${opts.relayUrl}, pubkey ${key.pubkey}, ${opts.replies} replies, ${opts.reactions} reactions, a write every ${opts.delaySecs.toFixed(2)} s`);
    const channel = opts.channel ?? randomUUID();
    if (!opts.channel) {
      const name = `long-thread-${process.pid}`;
      await out.publish(key.sign({ kind: 9007, tags: [['h', channel], ['name', name], ['visibility', 'open'], ['channel_type', 'stream']] }), 'channel creation');
    }
    const root = key.sign({ kind: 9, tags: [['h', channel]], content: `long thread root (${opts.replies} replies)` });
    await out.publish(root, 'thread root');
    const replies = [];
    for (let i = 1; i <= opts.replies; i++) {
      const reply = key.sign({ kind: 9, tags: [['h', channel], ['e', root.id, '', 'root'], ['p', key.pubkey]], content: `reply ${i}` });
      await out.publish(reply, `reply ${i}`);
      replies.push(reply);
      if (i % 25 === 0) log(`${i}/${opts.replies} replies`);
    }
    for (let i = 0; i < opts.reactions; i++) {
      const target = replies[(i * 7) % replies.length];
      await out.publish(key.sign({ kind: 7, tags: [['h', channel], ['e', target.id], ['p', target.pubkey]], content: '👍' }), `reaction ${i + 1}`);
    }
    if (out.retries) log(`${out.retries} rate-limited writes were retried`);
    return { channel, root: root.id, replies: replies.length, reactions: opts.reactions };
  } finally {
    client.close();
  }
}

/** `./.env` of the directory the seeder runs in, when there is one. */
function readDotenv(): string | undefined {
  try {
    return readFileSync('.env', 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SeedUsageError(`cannot read .env: ${(err as Error).message}`);
  }
}

async function main(): Promise<number> {
  let opts: SeedOptions;
  try {
    opts = parseSeedOptions(process.argv.slice(2), process.env, readDotenv());
  } catch (err) {
    if (!(err instanceof SeedUsageError)) throw err;
    if (err.exitCode === 0) process.stdout.write(`${err.message}\n`);
    else log(err.message);
    return err.exitCode;
  }
  try {
    const result = await seed(opts);
    process.stdout.write(`channel=${result.channel}\nroot=${result.root}\nreplies=${result.replies} reactions=${result.reactions}\n`);
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).message}`);
    return 1;
  }
}

process.exitCode = await main();
