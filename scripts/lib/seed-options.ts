/**
 * Command line and environment of `npm run seed:long-thread` (relay.md §8, seed 002).
 *
 * It reads exactly these, and nothing else from the environment:
 * - `SEED_RELAY_URL`, else `RELAY_URL` (the environment's, else the one in `./.env`), else
 *   `ws://localhost:3000`: the target relay, loopback only;
 * - `SEED_PRIVATE_KEY`: an optional 64-hex signing key; without it a throwaway key is made per run;
 * - `SEED_REACTIONS` (default 20), `SEED_DELAY` (seconds between writes, default 1.05; 0 when the
 *   relay's quota is raised), `SEED_CHANNEL` (post into this channel instead of creating one).
 * The flags `--reactions`, `--rate <writes/min>` and `--channel` are aliases and win over the
 * environment.
 *
 * Ambient `BUZZ_*` variables (`BUZZ_RELAY_URL`, `BUZZ_PRIVATE_KEY`, `BUZZ_RELAY_PRIVATE_KEY`,
 * `BUZZ_AUTH_TAG`, the relay's rate-limit settings, …) are deliberately never read: a developer's
 * shell often carries real credentials, and the seeder must not sign with them or aim at the
 * relay they belong to.
 */
import { parseEnv } from 'node:util';

export const DEFAULT_RELAY_URL = 'ws://localhost:3000';
export const DEFAULT_REPLIES = 187;
export const DEFAULT_REACTIONS = 20;
/** The stock relay's 60 human messages per minute (BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN), plus 5 % headroom. */
export const DEFAULT_DELAY_SECS = 1.05;
const HEADROOM = 1.05;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Only these spellings of loopback are accepted (relay.md §8). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface SeedOptions {
  readonly relayUrl: string;
  readonly replies: number;
  readonly reactions: number;
  /** Seconds between two writes. */
  readonly delaySecs: number;
  /** Post into this existing channel instead of creating one. */
  readonly channel: string | undefined;
  readonly secretKey: string | undefined;
}

/** A bad invocation or a refused relay: the script exits 2 with this message (0 for --help). */
export class SeedUsageError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

export const USAGE = `usage: npm run seed:long-thread -- [replies] [--rate <messages-per-min>] [--reactions <n>] [--channel <uuid>]
  replies      number of replies to the root (default ${DEFAULT_REPLIES})
environment (the flags are aliases and win):
  SEED_REACTIONS  (--reactions) kind-7 reactions spread over the replies (default ${DEFAULT_REACTIONS}, at most one per reply)
  SEED_DELAY      seconds between writes (default ${DEFAULT_DELAY_SECS}, under the stock 60 per minute; 0 when the relay's quota is raised);
                  --rate <n> sets it to 60/n seconds plus 5 % headroom
  SEED_CHANNEL    (--channel) post into this existing open channel instead of creating one
  SEED_RELAY_URL, else RELAY_URL from the environment or ./.env (default ${DEFAULT_RELAY_URL}, loopback only)
  SEED_PRIVATE_KEY  signing key (64 hex; default a throwaway key per run)
Ambient BUZZ_* variables are ignored.`;

/**
 * `dotenv` is the text of `./.env` when there is one: only its `RELAY_URL` is read (seed 002: the
 * dev relay's URL lives there), and the environment's wins.
 */
export function parseSeedOptions(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, dotenv?: string): SeedOptions {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') throw new SeedUsageError(USAGE, 0);
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split('=', 2);
    if (!['rate', 'reactions', 'channel'].includes(name)) throw new SeedUsageError(`unknown option --${name}\n${USAGE}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new SeedUsageError(`--${name} needs a value\n${USAGE}`);
    flags.set(name, value);
  }
  if (positional.length > 1) throw new SeedUsageError(`expected at most one positional argument (replies)\n${USAGE}`);
  const replies = positional.length ? integer('replies', positional[0], 1, 100_000) : DEFAULT_REPLIES;
  const channel = flags.get('channel') ?? (env.SEED_CHANNEL || undefined);
  if (channel !== undefined && !UUID.test(channel)) throw new SeedUsageError(`${flags.has('channel') ? '--channel' : 'SEED_CHANNEL'} must be a channel uuid`);
  const reactions = flags.has('reactions')
    ? integer('--reactions', flags.get('reactions')!, 0, 100_000)
    : env.SEED_REACTIONS
      ? integer('SEED_REACTIONS', env.SEED_REACTIONS, 0, 100_000)
      : DEFAULT_REACTIONS;
  const secretKey = env.SEED_PRIVATE_KEY || undefined;
  if (secretKey !== undefined && !/^[0-9a-fA-F]{64}$/.test(secretKey)) throw new SeedUsageError('SEED_PRIVATE_KEY must be 64 hex characters');
  return {
    relayUrl: loopbackRelayUrl(env.SEED_RELAY_URL || env.RELAY_URL || dotenvRelayUrl(dotenv) || DEFAULT_RELAY_URL),
    replies,
    reactions: Math.min(replies, reactions),
    delaySecs: flags.has('rate') ? (60 / integer('--rate', flags.get('rate')!, 1, 10_000_000)) * HEADROOM : env.SEED_DELAY ? seconds('SEED_DELAY', env.SEED_DELAY) : DEFAULT_DELAY_SECS,
    channel: channel?.toLowerCase(),
    secretKey,
  };
}

/** The URL when it is ws(s) on a loopback host; otherwise a SeedUsageError naming the host. */
export function loopbackRelayUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SeedUsageError(`refusing relay URL "${raw}": not a valid URL`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new SeedUsageError(`refusing relay URL "${raw}": only ws:// and wss:// are supported`);
  if (url.username || url.password) throw new SeedUsageError(`refusing relay URL "${raw}": credentials in the URL are not accepted`);
  if (!LOOPBACK_HOSTS.has(url.hostname.toLowerCase())) {
    throw new SeedUsageError(`refusing non-loopback relay host "${url.hostname}": the long-thread seeder only writes to localhost, 127.0.0.1 or [::1]`);
  }
  return url.toString();
}

function dotenvRelayUrl(dotenv: string | undefined): string | undefined {
  if (dotenv === undefined) return undefined;
  return parseEnv(dotenv).RELAY_URL || undefined;
}

/** Non-negative decimal seconds, at most an hour. */
function seconds(name: string, raw: string): number {
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(n >= 0 && n <= 3600)) throw new SeedUsageError(`${name} must be a number of seconds from 0 to 3600, got "${raw}"`);
  return n;
}

function integer(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new SeedUsageError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}
