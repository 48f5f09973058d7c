/**
 * What the zero-config relay keeps beside its embedded Postgres pair (the data directory's parent,
 * `<repo>/.data` by default), so that other processes of the same checkout find it:
 *
 * - `relay.key`: the relay's secret key when BUZZ_RELAY_PRIVATE_KEY is unset, made on first start
 *   (mode 0600) and read on every later one, so NIP-29 group state and NIP-43 lists signed before
 *   a restart are still the relay's own after it (NIP-11 `self`).
 * - `embedded.json`: the running relay's writer and reader URLs and its pid, written once the pair
 *   is up and removed at shutdown, so `npm run admin` finds the database without DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as ecc from 'tiny-secp256k1';
import { isHex64 } from '../../nostr/hex.js';

export interface EmbeddedUrls {
  readonly writerUrl: string;
  readonly readerUrl?: string;
}

interface StateFile extends EmbeddedUrls {
  readonly pid: number;
}

const KEY_FILE = 'relay.key';
const STATE_FILE = 'embedded.json';

/** The relay key kept in `stateDir`, made now when there is none. */
export function keptRelayKey(stateDir: string): { hex: string; file: string; made: boolean } {
  const file = join(stateDir, KEY_FILE);
  const kept = readKeptRelayKey(stateDir);
  if (kept !== undefined) return { hex: kept, file, made: false };
  let secret = randomBytes(32);
  while (!ecc.isPrivate(secret)) secret = randomBytes(32);
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(file, `${secret.toString('hex')}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { hex: secret.toString('hex'), file, made: true };
}

/** The relay key kept in `stateDir`, if one was made there. */
export function readKeptRelayKey(stateDir: string): string | undefined {
  const file = join(stateDir, KEY_FILE);
  if (!existsSync(file)) return undefined;
  const hex = readFileSync(file, 'utf8').trim();
  if (!isHex64(hex) || !ecc.isPrivate(Buffer.from(hex, 'hex'))) throw new Error(`${file} does not hold a 64-hex secret key: remove it to have a new one made`);
  return hex;
}

/** Records the running relay's database URLs; the returned function removes the record. */
export function recordRunning(stateDir: string, urls: EmbeddedUrls): () => void {
  const file = join(stateDir, STATE_FILE);
  const state: StateFile = { writerUrl: urls.writerUrl, readerUrl: urls.readerUrl, pid: process.pid };
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  return () => {
    if (readState(file)?.pid === process.pid) rmSync(file, { force: true });
  };
}

/** The URLs a relay of this checkout running on its embedded pair recorded, if that relay is still running. */
export function runningEmbedded(stateDirs: readonly string[]): (EmbeddedUrls & { stateDir: string }) | undefined {
  for (const stateDir of stateDirs) {
    const state = readState(join(stateDir, STATE_FILE));
    if (state !== undefined && alive(state.pid)) return { writerUrl: state.writerUrl, readerUrl: state.readerUrl, stateDir };
  }
  return undefined;
}

/** The state directory of an embedded data directory (`.data/pg` → `.data`). */
export function stateDirOf(dataDir: string): string {
  return dirname(dataDir);
}

function readState(file: string): StateFile | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<StateFile>;
    return typeof parsed.writerUrl === 'string' && typeof parsed.pid === 'number' ? (parsed as StateFile) : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
