/**
 * The relay's one configuration object. Nothing else reads process.env: the
 * loader turns the environment into a validated, typed, frozen value, and a bad
 * value stops start-up with a message naming the variable and what it accepts.
 *
 * Over 350 lines: each variable is documented beside its field and read in one loader, where the
 * checks that span variables (a cap within its pool, a heavy cap within its cap) see each other.
 */
import { getHeapStatistics } from 'node:v8';
import { MEMORY_SHARES } from './memory-shares.js';
import proxyaddr from '@fastify/proxy-addr';
import { ConfigError, EnvReader } from './env-reader.js';
import { isHex64 } from '../nostr/hex.js';
import { historyHeavyReadCap, historyReadCap } from '@buzz-relay/read-path';

export interface DatabaseConfig {
  /** Writer (and fence-probe) connection string; undefined = start the embedded default. */
  readonly url: string | undefined;
  /** Reader connection string; undefined = no reader pool, every read is a writer read. */
  readonly readUrl: string | undefined;
  readonly poolSize: number;
  readonly readPoolSize: number;
  readonly statementTimeoutMs: number;
  /**
   * `BUZZ_DB_CLIENT_READ_TIMEOUT_MS` (1..86400000, default 20000): statement deadline of every
   * client-driven read served by the writer (the replica's reader transaction has its own, 20 s).
   * Tighten-only against `statementTimeoutMs`.
   */
  readonly clientReadTimeoutMs: number;
  /**
   * `BUZZ_DB_WRITER_READ_CAP` (1..BUZZ_DB_POOL_SIZE, default half the pool, at least 1): how many
   * client-driven reads may hold writer connections at once; the rest of the pool stays free for
   * event writes, authentication and authorization.
   */
  readonly writerReadCap: number;
  /**
   * `BUZZ_DB_WRITER_HEAVY_READ_CAP` (1..BUZZ_DB_WRITER_READ_CAP, default 1): how many of those
   * reads may be heavy (a filter of more than 64 values) at once, so a flood of expensive filters
   * cannot take the writer's CPU from event writes.
   */
  readonly writerHeavyReadCap: number;
  /**
   * `BUZZ_DB_HISTORY_HEAVY_READ_CAP` (1..the history-read cap, default a quarter of it, at least
   * 1): how many replica history reads may be heavy (a full-text COUNT, a filter of more than 64
   * values) at once, so a flood of them cannot take every replica core from light reads.
   */
  readonly historyHeavyReadCap: number;
  /**
   * `BUZZ_DB_SEARCH_POOL_SIZE` (1..10000, default 4): the NIP-50 search pool's connections, on
   * `READ_DATABASE_URL` when set, else on `DATABASE_URL`; it also sizes the search gate (one
   * permit per connection).
   */
  readonly searchPoolSize: number;
  readonly lockTimeoutMs: number;
  readonly idleTxnTimeoutMs: number;
  readonly autoMigrate: boolean;
  readonly poolMetricsIntervalSecs: number;
  /** Named (prepared) statements per writer/reader connection; 0 = every statement unnamed. */
  readonly statementCacheSize: number;
  readonly partitionMonthsAhead: number;
}

export interface ReplicaConfig {
  /** Bounded-read budget B in ms; 0 disables bounded replica reads. */
  readonly readMaxAgeMs: number;
  readonly probeIntervalMs: number;
}

export interface RelayLimits {
  readonly maxConnections: number;
  /**
   * `BUZZ_CONNECTION_RESERVE` (0..BUZZ_MAX_CONNECTIONS-1, default a twentieth of it): the last
   * connections under the cap, admitted only for an address holding fewer than
   * RESERVE_PER_ADDRESS sockets, so one that filled the rest does not lock new clients out.
   */
  readonly connectionReserve: number;
  /** `BUZZ_MAX_CONNECTIONS_PER_IP` (default 1000): open WebSockets per client address (an IPv6 /64 counts as one). */
  readonly maxConnectionsPerIp: number;
  /** `BUZZ_MAX_CONNECTIONS_PER_KEY` (default 32): authenticated WebSockets per pubkey on this pod. */
  readonly maxConnectionsPerKey: number;
  /**
   * `BUZZ_PREAUTH_INPUT_BYTES_PER_IP` (0..1073741824, default 524288; 0 = no limit): bytes per
   * second an address's unauthenticated connections are read at, together, after a burst of four
   * seconds' worth (PreAuthInput).
   */
  readonly preauthInputBytesPerIp: number;
  /**
   * `BUZZ_KEY_SHARE_PERCENT` (1..100, default 25): the most of each shared capacity (the handler
   * budget, the writer-read cap, the replica history-read cap, the search gate) one key may hold
   * at once; 100 turns the shares off.
   */
  readonly keySharePercent: number;
  readonly maxConcurrentHandlers: number;
  readonly sendBuffer: number;
  /** Output bytes queued per connection before its sends count as full. */
  readonly sendBufferBytes: number;
  /**
   * `BUZZ_SEND_BUFFER_TOTAL_BYTES`: output bytes queued across all connections before the largest
   * holders are cut off. Unset: the output part of the memory budget (src/memory).
   */
  readonly sendBufferTotalBytes: number;
  /**
   * `BUZZ_MEMORY_BUDGET_BYTES` (16 MiB..1 TiB; default half of the V8 heap limit the process runs
   * with): what client-driven memory may use in all (held frames, subscription filters, history
   * rows, queued output). Work past it is refused, never an out-of-memory crash.
   */
  readonly memoryBudgetBytes: number;
  readonly maxFrameBytes: number;
  readonly slowClientGraceLimit: number;
}

export interface RateLimitConfig {
  readonly humanWsEventsPerSec: number;
  /**
   * `BUZZ_RATE_LIMIT_HUMAN_WS_BURST` (at least the per-second rate; default 30, or the rate when
   * higher): WebSocket EVENT/REQ/COUNT frames a pubkey that was idle may send at once, so a client
   * can open its subscriptions on connect; the bucket refills at `humanWsEventsPerSec`.
   */
  readonly humanWsBurst: number;
  readonly humanMessagesPerMin: number;
  readonly humanApiCallsPerMin: number;
  /** Sessions that carry a proved NIP-OA owner (agents) get the agent-standard tier. */
  readonly agentStandardMessagesPerMin: number;
  readonly agentStandardApiCallsPerMin: number;
}

/** Several pods on one Redis (relay.md §2.8, §2.4, §3.1 step 5, §5.1 step 5). */
export interface ScaleOutConfig {
  /**
   * `BUZZ_REDIS_URL` (redis: or rediss:); unset = one pod: live fan-out, presence, rate-limit
   * counters and the NIP-98 replay set all stay in this process.
   */
  readonly redisUrl: string | undefined;
  /**
   * Presence entry lifetime: `BUZZ_PRESENCE_TTL_SECS` (90..180, default 120), or the test hook
   * `BUZZ_EPHEMERAL_TTL_OVERRIDE` (1..180) when set.
   */
  readonly presenceTtlSecs: number;
  /**
   * `BUZZ_REDIS_FAIL_MODE`: what quotas and the NIP-98 replay check do when Redis fails.
   * `closed` (default, relay.md §2.4/§3.1): refuse (`rate-limited: shared admission unavailable`,
   * `NIP-98: replay check unavailable`). `local`: fall back to this pod's in-process counters and
   * replay set until Redis answers again, so a Redis outage does not stop ingest.
   */
  readonly redisFailMode: 'closed' | 'local';
  /** `BUZZ_SHUTDOWN_DRAIN_MS`: how long SIGTERM waits for in-flight EVENT/REQ/COUNT work. */
  readonly shutdownDrainMs: number;
  /**
   * `BUZZ_REDIS_GAP_FILL_MAX_EVENTS` (0..1000000, default 10000): most stored events one gap fill
   * replays from the writer after the Redis subscriber reconnects; 0 turns gap fill off.
   */
  readonly gapFillMaxEvents: number;
  /**
   * `BUZZ_REDIS_GAP_FILL_WINDOW_SECS` (60..3600, default 300): how long the duplicate guard remembers
   * delivered events, and so the longest outage a gap fill covers in full.
   */
  readonly gapFillWindowSecs: number;
}

/**
 * Whom the HTTP bridge believes when a request names its pubkey in the `X-Pubkey` development
 * header instead of signing NIP-98: nobody (`never`), loopback clients only (`loopback`, the
 * embedded default), or anyone (`always`, an explicit `BUZZ_REQUIRE_AUTH_TOKEN=false`).
 */
export type XPubkeyTrust = 'never' | 'loopback' | 'always';

/** The operator listener for `GET /metrics`; never the public port. */
export interface MetricsListenerConfig {
  /** `BUZZ_METRICS_HOST` (default 127.0.0.1). */
  readonly host: string;
  /** `BUZZ_METRICS_PORT` (default 9102; 0 = a free port, printed at start). */
  readonly port: number;
}

/** Limits on how slowly a client may send an HTTP request (WebSocket traffic is not affected). */
export interface HttpTimeouts {
  /** `BUZZ_HTTP_REQUEST_TIMEOUT_MS`: the whole request, headers and body, must arrive within it (408). */
  readonly requestTimeoutMs: number;
  /** `BUZZ_HTTP_HEADERS_TIMEOUT_MS`: the request headers must arrive within it (408); at most the request timeout. */
  readonly headersTimeoutMs: number;
  /** `BUZZ_HTTP_IDLE_TIMEOUT_MS`: an HTTP socket with no traffic either way for this long is closed. */
  readonly idleTimeoutMs: number;
  /** `BUZZ_HTTP_KEEP_ALIVE_TIMEOUT_MS`: how long a kept-alive socket waits for its next request. */
  readonly keepAliveTimeoutMs: number;
}

/**
 * OpenTelemetry tracing, from the standard OTEL_* variables: on when an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER`
 * names an exporter, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
 */
export interface TracingConfig {
  readonly enabled: boolean;
  /** `OTEL_SERVICE_NAME`, default `buzz-relay`. */
  readonly serviceName: string;
}

export function tracingConfig(r: EnvReader): TracingConfig {
  const exporter = r.string('OTEL_TRACES_EXPORTER', '').trim();
  const endpoint = r.present('OTEL_EXPORTER_OTLP_ENDPOINT') || r.present('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const disabled = r.string('OTEL_SDK_DISABLED', '').trim().toLowerCase() === 'true' || exporter === 'none';
  return { enabled: !disabled && (endpoint || exporter !== ''), serviceName: r.string('OTEL_SERVICE_NAME', 'buzz-relay') };
}

export interface AppConfig {
  readonly host: string;
  readonly port: number;
  readonly metrics: MetricsListenerConfig;
  readonly http: HttpTimeouts;
  readonly relayUrl: string;
  readonly logLevel: string;
  readonly tracing: TracingConfig;
  readonly database: DatabaseConfig;
  readonly replica: ReplicaConfig;
  readonly limits: RelayLimits;
  readonly rateLimits: RateLimitConfig;
  readonly scaleOut: ScaleOutConfig;
  readonly requireRelayMembership: boolean;
  /**
   * `BUZZ_ALLOW_NIP_OA_AUTH` (default false): with relay membership required, admit an agent whose
   * AUTH event carries exactly one valid NIP-OA `auth` tag from an owner who is a relay member.
   */
  readonly allowNipOaAuth: boolean;
  readonly pubkeyAllowlist: boolean;
  /**
   * `BUZZ_REQUIRE_AUTH_TOKEN`: true = NIP-98 only; false (explicit) = the `X-Pubkey` dev header is
   * trusted from anyone (a warning at start); unset = trusted from loopback clients on the
   * embedded default (no DATABASE_URL) and from nobody otherwise.
   */
  readonly xPubkeyTrust: XPubkeyTrust;
  /** Hosts the embedded default seeds a community for (localhost, 127.0.0.1). */
  readonly defaultCommunityHosts: readonly string[];
  readonly verifierThreads: number;
  /** Hex secret key the relay signs overlays with; undefined = random per process. */
  readonly relayPrivateKey: string | undefined;
  /**
   * `BUZZ_BAN_RECHECK_MS` (100..3600000, default 5000): how often the pod re-reads the ban state of
   * every pubkey it holds an authenticated socket for; a ban reaches an open socket within this.
   */
  readonly banRecheckMs: number;
  /**
   * `BUZZ_AUTH_VERIFY_TIMEOUT_MS` (1000..600000, default 30000): the relay's own bound on verifying
   * an AUTH that arrived in time (signature, ban, allowlist and membership lookups). Past it the
   * client gets `OK false "error: …"` and the socket closes; the 5 s AUTH deadline only measures
   * the client.
   */
  readonly authVerifyTimeoutMs: number;
  /**
   * `BUZZ_CORS_ORIGINS` (comma-separated `scheme://host[:port]`): the browser origins allowed to call
   * the HTTP bridge and to open a WebSocket. Empty (the default) = any origin.
   */
  readonly corsOrigins: readonly string[];
  /**
   * `RELAY_OWNER_PUBKEY` (64 hex, unset by default): the deployment's owner. It holds the owner
   * role in every community (bootstrapped into `relay_members` at start and by `create-community`)
   * and may run every relay-admin and moderation command. An invalid value is warned about and
   * ignored (relay.md §7).
   */
  readonly relayOwnerPubkey: string | undefined;
  /**
   * `RELAY_OPERATOR_PUBKEYS` (comma-separated 64-hex pubkeys, empty by default): the deployment's
   * operators, with the owner's authority over relay membership and moderation in every
   * community. An invalid entry stops start-up (relay.md §7).
   */
  readonly relayOperatorPubkeys: readonly string[];
  /**
   * `BUZZ_TRUSTED_PROXIES` (comma-separated addresses, CIDR ranges, or `loopback`, `linklocal`,
   * `uniquelocal`; empty by default): peers whose `X-Forwarded-For` names the client's address
   * for the per-address connection limits. Empty = the header is never believed.
   */
  readonly trustedProxies: readonly string[];
  /** Problems that do not stop start-up (an ignored RELAY_OWNER_PUBKEY); logged once at start. */
  readonly warnings: readonly string[];
  readonly authHold: AuthHoldLimits;
}

/**
 * What a new connection may send before its AUTH succeeds (clients subscribe and publish right
 * after connecting): those frames are held, in order, and run once AUTH succeeds, or are refused
 * with the usual reasons when it fails or the AUTH deadline passes. Frames past either bound are
 * refused at once. Worst case held per process: BUZZ_MAX_CONNECTIONS x maxBytes.
 */
export interface AuthHoldLimits {
  /** `BUZZ_AUTH_HOLD_FRAMES` (0..10000, default 30; 0 = nothing is held). */
  readonly maxFrames: number;
  /** `BUZZ_AUTH_HOLD_BYTES` (0..67108864, default 262144): the held frames' total size. */
  readonly maxBytes: number;
  /**
   * `BUZZ_AUTH_HOLD_GRACE_MS` (0..5000, default 1000): how long after the challenge frames wait for
   * an `AUTH` that has not arrived. A client with an auth handler answers within milliseconds; one
   * without gets its `auth-required:` refusals then, well before clients' own ~4 s timeouts, instead
   * of at the 5 s AUTH deadline. Frames sent while an `AUTH` is being verified always wait for it.
   */
  readonly graceMs: number;
}

export const READ_MAX_AGE_CLAMP_MS = 30_000;
export const DEFAULT_POOL_SIZE = 20;
export const CLIENT_READ_TIMEOUT_DEFAULT_MS = 20_000;
/** Search matching is a small, bounded share of a pod's database connections. */
export const DEFAULT_SEARCH_POOL_SIZE = 4;

/** Half the writer pool, at least one: 20 → 10, 2 → 1. */
export function defaultWriterReadCap(poolSize: number): number {
  return Math.max(1, Math.floor(poolSize / 2));
}
export const PRESENCE_TTL_DEFAULT_SECS = 120;
export const PRESENCE_TTL_MAX_SECS = 180;
const MIB = 1024 * 1024;
export const DEFAULT_METRICS_PORT = 9102;

export { ConfigError };

/** Half the V8 heap limit this process runs with (`--max-old-space-size` included). */
export function defaultMemoryBudgetBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 2);
}

export function loadConfig(env: NodeJS.ProcessEnv): AppConfig {
  const r = new EnvReader(env);
  if (r.present('BUZZ_REPLICA_HEAD_MAX_AGE_SECS')) {
    r.fail('BUZZ_REPLICA_HEAD_MAX_AGE_SECS', 'was renamed to BUZZ_REPLICA_READ_MAX_AGE_MS (milliseconds); remove it');
  }
  const poolSize = r.int('BUZZ_DB_POOL_SIZE', DEFAULT_POOL_SIZE, 1, 10_000);
  const writerReadCap = r.int('BUZZ_DB_WRITER_READ_CAP', defaultWriterReadCap(poolSize), 1, poolSize, `must be an integer in 1..BUZZ_DB_POOL_SIZE (${poolSize})`);
  const readPoolSize = r.int('BUZZ_DB_READ_POOL_SIZE', poolSize, 1, 10_000);
  const historyCap = historyReadCap(readPoolSize);
  const memoryBudgetBytes = r.int('BUZZ_MEMORY_BUDGET_BYTES', defaultMemoryBudgetBytes(), 16 * MIB, 1024 * 1024 * MIB);
  const bind = parseBind(r);
  const config: AppConfig = {
    host: bind.host,
    port: bind.port,
    metrics: {
      host: r.string('BUZZ_METRICS_HOST', '127.0.0.1').replace(/^\[(.*)\]$/, '$1'),
      port: r.int('BUZZ_METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65_535),
    },
    http: httpTimeouts(r),
    relayUrl: r.url('RELAY_URL', `ws://localhost:${bind.port}`, ['ws:', 'wss:']),
    logLevel: r.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    tracing: tracingConfig(r),
    database: {
      url: r.optionalUrl('DATABASE_URL', ['postgres:', 'postgresql:']),
      readUrl: r.optionalUrl('READ_DATABASE_URL', ['postgres:', 'postgresql:']),
      poolSize,
      readPoolSize,
      statementTimeoutMs: r.int('BUZZ_DB_STATEMENT_TIMEOUT_MS', 0, 0, 86_400_000),
      clientReadTimeoutMs: r.int('BUZZ_DB_CLIENT_READ_TIMEOUT_MS', CLIENT_READ_TIMEOUT_DEFAULT_MS, 1, 86_400_000),
      writerReadCap,
      writerHeavyReadCap: r.int('BUZZ_DB_WRITER_HEAVY_READ_CAP', 1, 1, writerReadCap, `must be an integer in 1..BUZZ_DB_WRITER_READ_CAP (${writerReadCap})`),
      historyHeavyReadCap: r.int('BUZZ_DB_HISTORY_HEAVY_READ_CAP', historyHeavyReadCap(historyCap), 1, historyCap, `must be an integer in 1..the history-read cap (${historyCap}, from BUZZ_DB_READ_POOL_SIZE)`),
      searchPoolSize: r.int('BUZZ_DB_SEARCH_POOL_SIZE', DEFAULT_SEARCH_POOL_SIZE, 1, 10_000),
      lockTimeoutMs: r.int('BUZZ_DB_LOCK_TIMEOUT_MS', 5000, 0, 86_400_000),
      idleTxnTimeoutMs: r.int('BUZZ_DB_IDLE_TXN_TIMEOUT_MS', 60_000, 0, 86_400_000),
      autoMigrate: r.bool('BUZZ_AUTO_MIGRATE', true),
      poolMetricsIntervalSecs: r.int('BUZZ_POOL_METRICS_INTERVAL_SECS', 10, 1, 3600),
      statementCacheSize: r.int('BUZZ_DB_STATEMENT_CACHE_SIZE', 100, 0, 10_000),
      partitionMonthsAhead: r.int('BUZZ_PARTITION_MONTHS_AHEAD', 3, 0, 36),
    },
    replica: {
      readMaxAgeMs: Math.min(r.int('BUZZ_REPLICA_READ_MAX_AGE_MS', 0, 0, Number.MAX_SAFE_INTEGER, 'must be a non-negative integer'), READ_MAX_AGE_CLAMP_MS),
      probeIntervalMs: r.int('BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS', 500, 300, 10_000),
    },
    limits: {
      ...connectionLimits(r),
      keySharePercent: r.int('BUZZ_KEY_SHARE_PERCENT', DEFAULT_KEY_SHARE_PERCENT, 1, 100),
      maxConcurrentHandlers: r.int('BUZZ_MAX_CONCURRENT_HANDLERS', 1024, 1, 1_000_000),
      sendBuffer: r.int('BUZZ_SEND_BUFFER', 1000, 1, 1_000_000),
      sendBufferBytes: r.int('BUZZ_SEND_BUFFER_BYTES', 16 * MIB, 64 * 1024, 1024 * MIB),
      sendBufferTotalBytes: r.int('BUZZ_SEND_BUFFER_TOTAL_BYTES', Math.floor(memoryBudgetBytes * MEMORY_SHARES.output), MIB, 64 * 1024 * MIB),
      memoryBudgetBytes,
      maxFrameBytes: r.int('BUZZ_MAX_FRAME_BYTES', 524_288, 1, 64 * 1024 * 1024),
      slowClientGraceLimit: r.int('BUZZ_SLOW_CLIENT_GRACE_LIMIT', 15, 1, 1_000_000),
    },
    rateLimits: rateLimits(r),
    scaleOut: {
      redisUrl: r.optionalUrl('BUZZ_REDIS_URL', ['redis:', 'rediss:']),
      presenceTtlSecs: r.present('BUZZ_EPHEMERAL_TTL_OVERRIDE')
        ? r.int('BUZZ_EPHEMERAL_TTL_OVERRIDE', PRESENCE_TTL_DEFAULT_SECS, 1, PRESENCE_TTL_MAX_SECS)
        : r.int('BUZZ_PRESENCE_TTL_SECS', PRESENCE_TTL_DEFAULT_SECS, 90, PRESENCE_TTL_MAX_SECS),
      redisFailMode: r.oneOf('BUZZ_REDIS_FAIL_MODE', 'closed', ['closed', 'local']),
      shutdownDrainMs: r.int('BUZZ_SHUTDOWN_DRAIN_MS', 8000, 0, 300_000),
      gapFillMaxEvents: r.int('BUZZ_REDIS_GAP_FILL_MAX_EVENTS', 10_000, 0, 1_000_000),
      gapFillWindowSecs: r.int('BUZZ_REDIS_GAP_FILL_WINDOW_SECS', 300, 60, 3600),
    },
    requireRelayMembership: r.bool('BUZZ_REQUIRE_RELAY_MEMBERSHIP', false),
    allowNipOaAuth: r.bool('BUZZ_ALLOW_NIP_OA_AUTH', false),
    pubkeyAllowlist: r.bool('BUZZ_PUBKEY_ALLOWLIST', false),
    xPubkeyTrust: xPubkeyTrust(r),
    defaultCommunityHosts: r.list('BUZZ_DEFAULT_COMMUNITY_HOSTS', ['localhost', '127.0.0.1']),
    verifierThreads: r.int('BUZZ_VERIFIER_THREADS', 0, 0, 64),
    relayPrivateKey: r.hex64('BUZZ_RELAY_PRIVATE_KEY'),
    banRecheckMs: r.int('BUZZ_BAN_RECHECK_MS', 5000, 100, 3_600_000),
    authVerifyTimeoutMs: r.int('BUZZ_AUTH_VERIFY_TIMEOUT_MS', 30_000, 1000, 600_000),
    corsOrigins: corsOrigins(r),
    ...relayAuthorities(r),
    trustedProxies: trustedProxies(r),
    authHold: {
      maxFrames: r.int('BUZZ_AUTH_HOLD_FRAMES', 30, 0, 10_000),
      maxBytes: r.int('BUZZ_AUTH_HOLD_BYTES', 256 * 1024, 0, 64 * MIB),
      // Up to the 5 s AUTH deadline (relay.md §2.1), past which the connection closes anyway.
      graceMs: r.int('BUZZ_AUTH_HOLD_GRACE_MS', 1000, 0, 5000),
    },
  };
  r.throwIfInvalid();
  return deepFreeze(config);
}

/**
 * Explicit `BUZZ_REQUIRE_AUTH_TOKEN` wins. Unset, the header is a convenience of the embedded
 * default only (`npm start` without DATABASE_URL), and even there only for loopback clients: a
 * deployment that forgets the variable does not let anyone name any pubkey.
 */
function xPubkeyTrust(r: EnvReader): XPubkeyTrust {
  if (r.present('BUZZ_REQUIRE_AUTH_TOKEN')) return r.bool('BUZZ_REQUIRE_AUTH_TOKEN', true) ? 'never' : 'always';
  return r.present('DATABASE_URL') ? 'never' : 'loopback';
}

/**
 * Each entry is an origin as a browser sends it in `Origin`: http or https, a host, an optional
 * port, nothing else. Entries are normalised the way browsers spell them (lower case, no default
 * port), so the relay compares them with the header as exact strings.
 */
function corsOrigins(r: EnvReader): readonly string[] {
  const origins: string[] = [];
  for (const entry of r.list('BUZZ_CORS_ORIGINS', [])) {
    const origin = originOf(entry);
    if (origin === undefined) {
      r.fail('BUZZ_CORS_ORIGINS', `must be a comma-separated list of origins like https://chat.example.com (scheme, host and optional port; empty = any origin), got ${JSON.stringify(entry)}`);
    } else if (!origins.includes(origin)) {
      origins.push(origin);
    }
  }
  return origins;
}

function originOf(entry: string): string | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  const bare = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  return bare && (url.protocol === 'http:' || url.protocol === 'https:') ? url.origin : undefined;
}

export const DEFAULT_WS_BURST = 30;
export const DEFAULT_MAX_CONNECTIONS = 10_000;
export const DEFAULT_MAX_CONNECTIONS_PER_IP = 1000;
export const DEFAULT_MAX_CONNECTIONS_PER_KEY = 32;
export const DEFAULT_KEY_SHARE_PERCENT = 25;

/** A twentieth of the cap, rounded down: 10,000 → 500, 19 → 0. */
export function defaultConnectionReserve(maxConnections: number): number {
  return Math.floor(maxConnections / 20);
}

function connectionLimits(r: EnvReader): Pick<RelayLimits, 'maxConnections' | 'connectionReserve' | 'maxConnectionsPerIp' | 'maxConnectionsPerKey' | 'preauthInputBytesPerIp'> {
  const maxConnections = r.int('BUZZ_MAX_CONNECTIONS', DEFAULT_MAX_CONNECTIONS, 1, 1_000_000);
  return {
    maxConnections,
    connectionReserve: r.int(
      'BUZZ_CONNECTION_RESERVE',
      defaultConnectionReserve(maxConnections),
      0,
      maxConnections - 1,
      `must be an integer in 0..${maxConnections - 1} (below BUZZ_MAX_CONNECTIONS)`,
    ),
    maxConnectionsPerIp: r.int('BUZZ_MAX_CONNECTIONS_PER_IP', DEFAULT_MAX_CONNECTIONS_PER_IP, 1, 1_000_000),
    maxConnectionsPerKey: r.int('BUZZ_MAX_CONNECTIONS_PER_KEY', DEFAULT_MAX_CONNECTIONS_PER_KEY, 1, 1_000_000),
    preauthInputBytesPerIp: r.int('BUZZ_PREAUTH_INPUT_BYTES_PER_IP', 512 * 1024, 0, 1024 * MIB),
  };
}

/** Each entry must be an address, a CIDR range or one of proxy-addr's named ranges. */
function trustedProxies(r: EnvReader): readonly string[] {
  const entries = r.list('BUZZ_TRUSTED_PROXIES', []);
  const bad = entries.filter((entry) => {
    try {
      proxyaddr.compile(entry);
      return false;
    } catch {
      return true;
    }
  });
  if (bad.length > 0) {
    r.fail('BUZZ_TRUSTED_PROXIES', `must be comma-separated addresses, CIDR ranges (10.0.0.0/8) or loopback, linklocal, uniquelocal; not an address: ${bad.map((b) => JSON.stringify(b)).join(', ')}`);
  }
  return bad.length > 0 ? [] : [...new Set(entries)];
}

function rateLimits(r: EnvReader): RateLimitConfig {
  const humanWsEventsPerSec = r.int('BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC', 10, 1, 1_000_000);
  return {
    humanWsEventsPerSec,
    humanWsBurst: r.int(
      'BUZZ_RATE_LIMIT_HUMAN_WS_BURST',
      Math.max(DEFAULT_WS_BURST, humanWsEventsPerSec),
      humanWsEventsPerSec,
      1_000_000,
      `must be an integer in ${humanWsEventsPerSec}..1000000 (at least BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC)`,
    ),
    humanMessagesPerMin: r.int('BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN', 60, 1, 1_000_000),
    humanApiCallsPerMin: r.int('BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN', 300, 1, 1_000_000),
    agentStandardMessagesPerMin: r.int('BUZZ_RATE_LIMIT_AGENT_STANDARD_MESSAGES_PER_MIN', 120, 1, 1_000_000),
    agentStandardApiCallsPerMin: r.int('BUZZ_RATE_LIMIT_AGENT_STANDARD_API_CALLS_PER_MIN', 600, 1, 1_000_000),
  };
}

function httpTimeouts(r: EnvReader): HttpTimeouts {
  const requestTimeoutMs = r.int('BUZZ_HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const headersTimeoutMs = r.int('BUZZ_HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    r.fail('BUZZ_HTTP_HEADERS_TIMEOUT_MS', `must not exceed BUZZ_HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs: Math.min(headersTimeoutMs, requestTimeoutMs),
    idleTimeoutMs: r.int('BUZZ_HTTP_IDLE_TIMEOUT_MS', 120_000, 100, 3_600_000),
    keepAliveTimeoutMs: r.int('BUZZ_HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
  };
}


/** The owner (warned about and ignored when invalid) and the operators (fail hard when invalid). */
function relayAuthorities(r: EnvReader): Pick<AppConfig, 'relayOwnerPubkey' | 'relayOperatorPubkeys' | 'warnings'> {
  const warnings: string[] = [];
  const rawOwner = r.string('RELAY_OWNER_PUBKEY', '').trim().toLowerCase();
  let relayOwnerPubkey: string | undefined;
  if (isHex64(rawOwner)) relayOwnerPubkey = rawOwner;
  else if (rawOwner !== '') warnings.push('RELAY_OWNER_PUBKEY is not a 64-hex pubkey; ignored (no configured relay owner)');
  const relayOperatorPubkeys = r.list('RELAY_OPERATOR_PUBKEYS', []);
  const bad = relayOperatorPubkeys.filter((pk) => !isHex64(pk));
  if (bad.length > 0) r.fail('RELAY_OPERATOR_PUBKEYS', `must be comma-separated 64-hex pubkeys; ${bad.length} entr${bad.length === 1 ? 'y is' : 'ies are'} not`);
  return { relayOwnerPubkey, relayOperatorPubkeys: [...new Set(relayOperatorPubkeys)], warnings };
}

/** `PORT` wins over the port of `BUZZ_BIND_ADDR` (default 0.0.0.0:3000). */
function parseBind(r: EnvReader): { host: string; port: number } {
  const addr = r.string('BUZZ_BIND_ADDR', '0.0.0.0:3000');
  const m = /^(.*):(\d{1,5})$/.exec(addr);
  if (!m || Number(m[2]) > 65_535) {
    r.fail('BUZZ_BIND_ADDR', `must be host:port with a port in 0..65535, got ${JSON.stringify(addr)}`);
    return { host: '0.0.0.0', port: 3000 };
  }
  const host = m[1].replace(/^\[(.*)\]$/, '$1') || '0.0.0.0';
  return { host, port: r.int('PORT', Number(m[2]), 0, 65_535) };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
