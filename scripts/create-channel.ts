/**
 * `npm run create-channel -- <name> [--private]`: creates a channel the way a client does, with a
 * signed NIP-29 create-group (kind 9007) over the WebSocket after NIP-42 AUTH, and prints its id.
 * A newcomer's first step after `npm start` (the start-up banner names it).
 *
 * Reads `RELAY_URL` (default ws://localhost:3000) and `CHANNEL_PRIVATE_KEY` (64 hex). Without a
 * key it signs with the one in `.data/client.key`, made on first use (mode 0600), so the channels
 * it creates keep one owner, who can later add members or change them (docs/moderation.md).
 *
 * Prints `channel=<id>` and `owner=<pubkey>` on stdout. Exit codes: 0 created, 1 the relay refused
 * or could not be reached, 2 bad usage.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BuzzClient } from '../src/client/buzz-client.js';
import { ClientKey } from '../src/client/client-key.js';

const USAGE = `usage: npm run create-channel -- <name> [--private]
  <name>      the channel's name (its id is a new UUID)
  --private   members only (default: open, anyone in the community reads and joins)
environment:
  RELAY_URL            the relay (default ws://localhost:3000)
  CHANNEL_PRIVATE_KEY  the owner's key, 64 hex (default: the key in .data/client.key, made on first use)`;

/** The package root: dist/scripts/ or scripts/ sits two or one levels below it. */
const ROOT = [path.resolve(import.meta.dirname, '..'), path.resolve(import.meta.dirname, '../..')].find((dir) => existsSync(path.join(dir, 'package.json')))!;

function usage(message: string, code = 2): never {
  process.stderr.write(`${message ? `create-channel: ${message}\n` : ''}${USAGE}\n`);
  process.exit(code);
}

/** CHANNEL_PRIVATE_KEY, else the key kept in .data/client.key (made now if absent). */
function ownerKey(): { key: ClientKey; from: string } {
  const given = process.env.CHANNEL_PRIVATE_KEY?.trim();
  if (given) return { key: new ClientKey(given), from: 'CHANNEL_PRIVATE_KEY' };
  const file = path.join(ROOT, '.data', 'client.key');
  if (existsSync(file)) return { key: new ClientKey(readFileSync(file, 'utf8').trim()), from: file };
  const { key, hex } = newKey();
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${hex}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { key, from: `${file} (new)` };
}

/** A random valid key and its hex (ClientKey.generate keeps its secret to itself). */
function newKey(): { key: ClientKey; hex: string } {
  for (;;) {
    const hex = randomBytes(32).toString('hex');
    try {
      return { key: new ClientKey(hex), hex };
    } catch {
      // not a valid scalar (about 1 in 2^128): draw again
    }
  }
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ allowPositionals: true, strict: true, options: { private: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    usage((err as Error).message);
  }
  if (parsed.values.help) usage('', 0);
  const [name, ...rest] = parsed.positionals;
  if (name === undefined || rest.length > 0 || name.trim() === '') usage('give exactly one channel name');
  const url = process.env.RELAY_URL?.trim() || 'ws://localhost:3000';
  let owner;
  try {
    owner = ownerKey();
  } catch (err) {
    usage((err as Error).message);
  }
  const channel = randomUUID();
  const visibility = parsed.values.private ? 'private' : 'open';
  const client = await BuzzClient.connect({ url, secretKey: owner.key });
  try {
    const result = await client.publish(owner.key.sign({ kind: 9007, tags: [['h', channel], ['name', name], ['visibility', visibility]] }));
    if (!result.ok) {
      process.stderr.write(`create-channel: the relay refused the channel: ${result.message}\n`);
      process.exitCode = 1;
      return;
    }
  } finally {
    client.close();
  }
  process.stderr.write(`create-channel: ${visibility} channel "${name}" created on ${url}, signed by the key from ${owner.from}\n`);
  process.stdout.write(`channel=${channel}\nowner=${owner.key.pubkey}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`create-channel: ${(err as Error).message ?? String(err)}\n`);
  process.exit(1);
});
