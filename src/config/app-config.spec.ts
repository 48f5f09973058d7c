import { ConfigError, loadConfig } from './app-config.js';

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems];
    throw e;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies the spec defaults', () => {
    const c = loadConfig({});
    expect(c.port).toBe(3000);
    expect(c.database.url).toBeUndefined();
    expect(c.database.readUrl).toBeUndefined();
    expect(c.database.poolSize).toBe(20);
    expect(c.database.readPoolSize).toBe(20);
    expect(c.database.lockTimeoutMs).toBe(5000);
    expect(c.database.idleTxnTimeoutMs).toBe(60000);
    expect(c.database.statementTimeoutMs).toBe(0);
    expect(c.database.autoMigrate).toBe(true);
    expect(c.replica.readMaxAgeMs).toBe(0);
    expect(c.replica.probeIntervalMs).toBe(500);
    expect(c.limits.maxFrameBytes).toBe(524288);
    expect(Object.isFrozen(c.database)).toBe(true);
  });

  it('holds frames before AUTH and admits a connect-time burst by default', () => {
    const c = loadConfig({});
    expect(c.authHold).toEqual({ maxFrames: 30, maxBytes: 262144, graceMs: 1000 });
    expect(c.rateLimits.humanWsEventsPerSec).toBe(10);
    expect(c.rateLimits.humanWsBurst).toBe(30);
    // The burst follows a higher rate unless set, and may not be below it.
    expect(loadConfig({ BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '50' }).rateLimits.humanWsBurst).toBe(50);
    expect(loadConfig({ BUZZ_RATE_LIMIT_HUMAN_WS_BURST: '12' }).rateLimits.humanWsBurst).toBe(12);
    expect(problemsOf({ BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC: '50', BUZZ_RATE_LIMIT_HUMAN_WS_BURST: '40' })[0]).toContain('50..1000000');
  });

  describe('connection limits and fair shares', () => {
    it('defaults: 10,000 connections with 500 in reserve, 1,000 per address, 32 per key, a quarter of each capacity per key, no trusted proxy', () => {
      const c = loadConfig({});
      expect(c.limits).toEqual(
        expect.objectContaining({ maxConnections: 10000, connectionReserve: 500, maxConnectionsPerIp: 1000, maxConnectionsPerKey: 32, keySharePercent: 25 }),
      );
      expect(c.trustedProxies).toEqual([]);
      expect(loadConfig({ BUZZ_MAX_CONNECTIONS: '40' }).limits.connectionReserve).toBe(2);
    });

    it('takes the reserve below the cap only, and the share in 1..100', () => {
      expect(loadConfig({ BUZZ_MAX_CONNECTIONS: '40', BUZZ_CONNECTION_RESERVE: '39' }).limits.connectionReserve).toBe(39);
      expect(problemsOf({ BUZZ_MAX_CONNECTIONS: '40', BUZZ_CONNECTION_RESERVE: '40' })).toEqual([
        'BUZZ_CONNECTION_RESERVE must be an integer in 0..39 (below BUZZ_MAX_CONNECTIONS), got "40"',
      ]);
      expect(problemsOf({ BUZZ_KEY_SHARE_PERCENT: '0' })).toEqual(['BUZZ_KEY_SHARE_PERCENT must be an integer in 1..100, got "0"']);
      expect(problemsOf({ BUZZ_MAX_CONNECTIONS_PER_IP: '0', BUZZ_MAX_CONNECTIONS_PER_KEY: 'many' })).toEqual([
        'BUZZ_MAX_CONNECTIONS_PER_IP must be an integer in 1..1000000, got "0"',
        'BUZZ_MAX_CONNECTIONS_PER_KEY must be an integer in 1..1000000, got "many"',
      ]);
    });

    it('takes trusted proxies as addresses, CIDR ranges or named ranges, and stops start-up naming an entry that is none', () => {
      expect(loadConfig({ BUZZ_TRUSTED_PROXIES: '10.0.0.0/8, loopback,fd00::/8,10.0.0.0/8' }).trustedProxies).toEqual(['10.0.0.0/8', 'loopback', 'fd00::/8']);
      expect(problemsOf({ BUZZ_TRUSTED_PROXIES: '10.0.0.1,my-proxy' })).toEqual([
        'BUZZ_TRUSTED_PROXIES must be comma-separated addresses, CIDR ranges (10.0.0.0/8) or loopback, linklocal, uniquelocal; not an address: "my-proxy"',
      ]);
    });
  });

  it('takes the reader size from the writer size unless set', () => {
    expect(loadConfig({ BUZZ_DB_POOL_SIZE: '7' }).database.readPoolSize).toBe(7);
    expect(loadConfig({ BUZZ_DB_POOL_SIZE: '7', BUZZ_DB_READ_POOL_SIZE: '24' }).database.readPoolSize).toBe(24);
  });

  it('takes one heavy writer read by default, and at most the writer-read cap', () => {
    expect(loadConfig({}).database.writerHeavyReadCap).toBe(1);
    expect(loadConfig({ BUZZ_DB_WRITER_READ_CAP: '4', BUZZ_DB_WRITER_HEAVY_READ_CAP: '4' }).database.writerHeavyReadCap).toBe(4);
    expect(() => loadConfig({ BUZZ_DB_WRITER_READ_CAP: '4', BUZZ_DB_WRITER_HEAVY_READ_CAP: '5' })).toThrow(/BUZZ_DB_WRITER_HEAVY_READ_CAP.*1\.\.BUZZ_DB_WRITER_READ_CAP \(4\)/);
  });

  it('takes a quarter of the history-read cap for heavy replica reads by default, and at most the cap', () => {
    expect(loadConfig({}).database.historyHeavyReadCap).toBe(4); // pool 20 → cap 16
    expect(loadConfig({ BUZZ_DB_READ_POOL_SIZE: '2' }).database.historyHeavyReadCap).toBe(1);
    expect(loadConfig({ BUZZ_DB_READ_POOL_SIZE: '10', BUZZ_DB_HISTORY_HEAVY_READ_CAP: '8' }).database.historyHeavyReadCap).toBe(8);
    expect(() => loadConfig({ BUZZ_DB_READ_POOL_SIZE: '10', BUZZ_DB_HISTORY_HEAVY_READ_CAP: '9' })).toThrow(/BUZZ_DB_HISTORY_HEAVY_READ_CAP.*1\.\.the history-read cap \(8/);
  });

  it('treats a blank READ_DATABASE_URL as unset', () => {
    expect(loadConfig({ READ_DATABASE_URL: '   ' }).database.readUrl).toBeUndefined();
  });

  it('clamps the read budget to 30 s', () => {
    expect(loadConfig({ BUZZ_REPLICA_READ_MAX_AGE_MS: '90000' }).replica.readMaxAgeMs).toBe(30000);
  });

  it.each([
    ['BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS', '299', '300..10000'],
    ['BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS', '10001', '300..10000'],
    ['BUZZ_REPLICA_READ_MAX_AGE_MS', '-5', 'must be a non-negative integer'],
    ['BUZZ_REPLICA_READ_MAX_AGE_MS', 'soon', 'must be a non-negative integer'],
    ['BUZZ_DB_POOL_SIZE', '0', '1..10000'],
    ['PORT', '70000', '0..65535'],
    ['BUZZ_AUTO_MIGRATE', 'maybe', 'true/false'],
    ['DATABASE_URL', 'mysql://x', 'postgres:'],
    ['BUZZ_AUTH_HOLD_FRAMES', '-1', '0..10000'],
    ['BUZZ_AUTH_HOLD_BYTES', 'lots', '0..67108864'],
    ['BUZZ_AUTH_HOLD_GRACE_MS', '6000', '0..5000'],
    ['BUZZ_RATE_LIMIT_HUMAN_WS_BURST', '9', '10..1000000 (at least BUZZ_RATE_LIMIT_HUMAN_WS_EVENTS_PER_SEC)'],
  ])('rejects %s=%s naming the variable and range', (name, value, expected) => {
    const problems = problemsOf({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(name);
    expect(problems[0]).toContain(expected);
  });

  it('reports every bad variable at once', () => {
    expect(problemsOf({ PORT: 'x', BUZZ_DB_POOL_SIZE: 'y' })).toHaveLength(2);
  });

  it('refuses the renamed head-age variable', () => {
    expect(problemsOf({ BUZZ_REPLICA_HEAD_MAX_AGE_SECS: '1' })[0]).toContain('BUZZ_REPLICA_READ_MAX_AGE_MS');
  });

  it('never echoes a database URL that may hold a password', () => {
    const [problem] = problemsOf({ DATABASE_URL: 'http://user:secret@host/db' });
    expect(problem).not.toContain('secret');
  });

  describe('X-Pubkey trust (BUZZ_REQUIRE_AUTH_TOKEN)', () => {
    const PG = 'postgres://buzz@db.example/buzz';

    it('unset: loopback clients of the embedded default only, nobody once DATABASE_URL is given', () => {
      expect(loadConfig({}).xPubkeyTrust).toBe('loopback');
      expect(loadConfig({ DATABASE_URL: PG }).xPubkeyTrust).toBe('never');
      expect(loadConfig({ DATABASE_URL: '  ' }).xPubkeyTrust).toBe('loopback');
    });

    it('explicit: true refuses the header everywhere, false trusts it from anyone', () => {
      expect(loadConfig({ BUZZ_REQUIRE_AUTH_TOKEN: 'true' }).xPubkeyTrust).toBe('never');
      expect(loadConfig({ BUZZ_REQUIRE_AUTH_TOKEN: 'false', DATABASE_URL: PG }).xPubkeyTrust).toBe('always');
      expect(loadConfig({ BUZZ_REQUIRE_AUTH_TOKEN: 'false' }).xPubkeyTrust).toBe('always');
    });
  });

  describe('operator listener and HTTP deadlines', () => {
    it('defaults /metrics to 127.0.0.1:9102 and the deadlines to 30 s / 10 s / 120 s / 72 s', () => {
      const c = loadConfig({});
      expect(c.metrics).toEqual({ host: '127.0.0.1', port: 9102 });
      expect(c.http).toEqual({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, idleTimeoutMs: 120_000, keepAliveTimeoutMs: 72_000 });
    });

    it('takes a bracketed IPv6 metrics host and port 0', () => {
      expect(loadConfig({ BUZZ_METRICS_HOST: '[::1]', BUZZ_METRICS_PORT: '0' }).metrics).toEqual({ host: '::1', port: 0 });
    });

    it('keeps the headers deadline within a shorter request deadline, and refuses a longer one', () => {
      expect(loadConfig({ BUZZ_HTTP_REQUEST_TIMEOUT_MS: '4000' }).http.headersTimeoutMs).toBe(4000);
      const [problem] = problemsOf({ BUZZ_HTTP_REQUEST_TIMEOUT_MS: '4000', BUZZ_HTTP_HEADERS_TIMEOUT_MS: '5000' });
      expect(problem).toContain('BUZZ_HTTP_HEADERS_TIMEOUT_MS must not exceed BUZZ_HTTP_REQUEST_TIMEOUT_MS');
    });

    it.each(['BUZZ_HTTP_REQUEST_TIMEOUT_MS', 'BUZZ_HTTP_HEADERS_TIMEOUT_MS', 'BUZZ_HTTP_IDLE_TIMEOUT_MS', 'BUZZ_HTTP_KEEP_ALIVE_TIMEOUT_MS'])(
      'refuses %s=0 (no deadline is not a choice)',
      (name) => {
        expect(problemsOf({ [name]: '0' })[0]).toContain(`${name} must be an integer in 100..3600000`);
      },
    );
  });

  describe('BUZZ_CORS_ORIGINS', () => {
    it('is empty (any origin) by default', () => {
      expect(loadConfig({}).corsOrigins).toEqual([]);
    });

    it('spells each origin as a browser sends it: lower case, no default port, no trailing slash, no repeats', () => {
      const c = loadConfig({ BUZZ_CORS_ORIGINS: ' https://Chat.Example.com , http://localhost:5173/,https://chat.example.com:443 ' });
      expect(c.corsOrigins).toEqual(['https://chat.example.com', 'http://localhost:5173']);
    });

    it.each(['*', 'chat.example.com', 'https://chat.example.com/app', 'https://chat.example.com?x=1', 'ftp://chat.example.com', 'https://user@chat.example.com'])(
      'refuses %s with a message naming the variable',
      (entry) => {
        expect(problemsOf({ BUZZ_CORS_ORIGINS: entry })[0]).toContain(`BUZZ_CORS_ORIGINS must be a comma-separated list of origins`);
      },
    );
  });

  describe('tracing from the standard OTEL_* variables', () => {
    it.each<[Record<string, string>, boolean]>([
      [{}, false],
      [{ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, false],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
      [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
      [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
      [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
      [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    ])('%j → enabled %s', (env, enabled) => {
      expect(loadConfig(env).tracing.enabled).toBe(enabled);
    });

    it('names the service buzz-relay unless OTEL_SERVICE_NAME says otherwise', () => {
      expect(loadConfig({}).tracing.serviceName).toBe('buzz-relay');
      expect(loadConfig({ OTEL_SERVICE_NAME: 'chat-eu' }).tracing.serviceName).toBe('chat-eu');
    });
  });

  describe('relay owner and operators', () => {
    const A = 'a'.repeat(64);
    const B = 'B'.repeat(64);

    it('takes a 64-hex owner (lowercased) and warns about, then ignores, anything else', () => {
      expect(loadConfig({ RELAY_OWNER_PUBKEY: A.toUpperCase() })).toMatchObject({ relayOwnerPubkey: A, warnings: [] });
      const bad = loadConfig({ RELAY_OWNER_PUBKEY: 'npub1xyz' });
      expect(bad.relayOwnerPubkey).toBeUndefined();
      expect(bad.warnings).toEqual(['RELAY_OWNER_PUBKEY is not a 64-hex pubkey; ignored (no configured relay owner)']);
      expect(loadConfig({}).relayOwnerPubkey).toBeUndefined();
    });

    it('takes a list of operators and stops start-up on an invalid entry', () => {
      expect(loadConfig({ RELAY_OPERATOR_PUBKEYS: `${A}, ${B},${A}` }).relayOperatorPubkeys).toEqual([A, B.toLowerCase()]);
      expect(loadConfig({}).relayOperatorPubkeys).toEqual([]);
      expect(problemsOf({ RELAY_OPERATOR_PUBKEYS: `${A},not-a-key` })[0]).toContain('RELAY_OPERATOR_PUBKEYS must be comma-separated 64-hex pubkeys; 1 entry is not');
    });
  });
});
