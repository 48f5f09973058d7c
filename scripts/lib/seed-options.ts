/**
 * Command line and environment of `npm run seed:long-thread` (relay.md §8, seed 002).
 *
 * It reads exactly these, and nothing else from the environment:
 * - `SEED_RELAY_URL`, else `RELAY_URL`, else `ws://localhost:3000`: the target relay;
 * - `SEED_PRIVATE_KEY`: an optional 64-hex signing key; without it a throwaway key is made per run.
 *
 * Ambient `BUZZ_*` variables (`BUZZ_RELAY_URL`, `BUZZ_PRIVATE_KEY`, `BUZZ_RELAY_PRIVATE_KEY`,
 * `BUZZ_AUTH_TAG`, the relay's rate-limit settings, …) are deliberately never read: a developer's
 * shell often carries real credentials, and the seeder must not sign with them or aim at the
 * relay they belong to.
 */
export const DEFAULT_RELAY_URL = 'ws://localhost:3000';
export const DEFAULT_REPLIES = 187;
export const DEFAULT_REACTIONS = 20;
/** The stock relay's human message quota (BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN default). */
export const DEFAULT_RATE_PER_MIN = 60;

/** Only these spellings of loopback are accepted (relay.md §8). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface SeedOptions {
  readonly relayUrl: string;
  readonly replies: number;
  readonly reactions: number;
  readonly ratePerMin: number;
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
  --rate       writes per minute, matched to the relay's human message quota (default ${DEFAULT_RATE_PER_MIN})
  --reactions  kind-7 reactions spread over the replies (default ${DEFAULT_REACTIONS}, at most one per reply)
  --channel    post into this existing open channel instead of creating one
environment: SEED_RELAY_URL or RELAY_URL (default ${DEFAULT_RELAY_URL}, loopback only), SEED_PRIVATE_KEY (optional).
Ambient BUZZ_* variables are ignored.`;

export function parseSeedOptions(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): SeedOptions {
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
  const channel = flags.get('channel');
  if (channel !== undefined && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(channel)) throw new SeedUsageError('--channel must be a channel uuid');
  const secretKey = env.SEED_PRIVATE_KEY || undefined;
  if (secretKey !== undefined && !/^[0-9a-fA-F]{64}$/.test(secretKey)) throw new SeedUsageError('SEED_PRIVATE_KEY must be 64 hex characters');
  return {
    relayUrl: loopbackRelayUrl(env.SEED_RELAY_URL || env.RELAY_URL || DEFAULT_RELAY_URL),
    replies,
    reactions: Math.min(replies, flags.has('reactions') ? integer('--reactions', flags.get('reactions')!, 0, 100_000) : DEFAULT_REACTIONS),
    ratePerMin: flags.has('rate') ? integer('--rate', flags.get('rate')!, 1, 10_000_000) : DEFAULT_RATE_PER_MIN,
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

function integer(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new SeedUsageError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}
