import { readdirSync, readFileSync } from 'node:fs';
import { register } from 'prom-client';
import {
  ACQUIRE_OUTCOMES,
  ADVISORY_LOCK_TYPES,
  TRANSACTION_OPERATIONS,
  DatabaseMetrics,
  POOL_ROLES,
  READER_OPERATIONS,
  REJECTED_REASONS,
  SEARCH_OPERATIONS,
  REPLICA_REASONS,
  ROUTE_PATHS,
  SPILL_REASONS,
  WRITER_OPERATIONS,
  WRITER_REASONS,
} from './database-metrics.service.js';

describe('database metric vocabularies', () => {
  const metrics = new DatabaseMetrics();

  it('label_vocabularies_are_closed_and_documented', () => {
    expect(ROUTE_PATHS).toHaveLength(18);
    expect([...WRITER_REASONS, ...REPLICA_REASONS, ...REJECTED_REASONS]).not.toContain('pool_busy');
    expect(SPILL_REASONS).toEqual([
      'heartbeat_stale',
      'heartbeat_missing',
      'fence_wall_behind',
      'replica_lag',
      'reader_acquire_timeout',
      'reader_proof_timeout',
      'reader_token_behind',
      'reader_validation_error',
    ]);
    expect(WRITER_OPERATIONS.length + READER_OPERATIONS.length).toBe(12);
    expect(SEARCH_OPERATIONS).toEqual(['subscription_history']); // the search pool's one pair
    // §6.3, exactly as the spec lists them.
    expect(ADVISORY_LOCK_TYPES).toEqual(['replacement', 'membership', 'push_gate', 'deletion', 'migration_schema_safety']);
    expect(TRANSACTION_OPERATIONS).toEqual([
      'replace_parameterized_event',
      'replace_addressable_event',
      'publish_nip43_membership_locked',
      'accept_push_lease_event',
      'begin_community_deletion_quiescing',
      'fence_community_deletion',
    ]);
  });

  it('the pool acquisition series budget derives from the closed vocabularies (legacy families carry operation)', async () => {
    const pairs = WRITER_OPERATIONS.length + READER_OPERATIONS.length + SEARCH_OPERATIONS.length;
    const legacyPairs = WRITER_OPERATIONS.length + READER_OPERATIONS.length; // the search pool postdates them
    for (const op of SEARCH_OPERATIONS) {
      for (const outcome of ACQUIRE_OUTCOMES) {
        metrics.acquireBegin({ poolRole: 'search', operation: op });
        metrics.acquireEnd({ poolRole: 'search', operation: op }, outcome, 0.001, false);
      }
    }
    for (const op of WRITER_OPERATIONS) {
      for (const outcome of ACQUIRE_OUTCOMES) {
        metrics.acquireBegin({ poolRole: 'writer', operation: op });
        metrics.acquireEnd({ poolRole: 'writer', operation: op }, outcome, 0.001, true);
      }
    }
    for (const op of READER_OPERATIONS) {
      for (const outcome of ACQUIRE_OUTCOMES) {
        metrics.acquireBegin({ poolRole: 'reader', operation: op });
        metrics.acquireEnd({ poolRole: 'reader', operation: op }, outcome, 0.001, true);
      }
    }
    metrics.publishWaiters(true);
    const series = async (name: string) => (await register.getSingleMetric(name)!.get()).values;
    expect(await series('buzz_db_pool_acquire_started_total')).toHaveLength(pairs);
    expect(await series('buzz_db_pool_acquire_attempts_total')).toHaveLength(pairs * ACQUIRE_OUTCOMES.length);
    expect(await series('buzz_db_pool_waiters')).toHaveLength(pairs);
    // Legacy families: never `cancelled`, always with `operation`.
    const legacy = await series('buzz_db_pool_acquisitions_total');
    expect(legacy).toHaveLength(legacyPairs * (ACQUIRE_OUTCOMES.length - 1));
    expect(legacy.every((v) => typeof v.labels.operation === 'string')).toBe(true);
    const waitCounts = (await series('buzz_db_pool_acquire_wait_seconds')).filter((v) => (v as { metricName?: string }).metricName === 'buzz_db_pool_acquire_wait_seconds_count');
    expect(waitCounts).toHaveLength(legacyPairs * (ACQUIRE_OUTCOMES.length - 1));
    expect(waitCounts.every((v) => typeof v.labels.operation === 'string')).toBe(true);
  });

  it('both legacy families require operation (seed 000); summing over it gives the old series', async () => {
    for (const family of [metrics.legacyAcquireWait, metrics.legacyAcquisitions]) {
      expect((family as unknown as { labelNames: string[] }).labelNames).toEqual(['pool_role', 'operation', 'outcome']);
    }
    const readerTimeouts = async () => (await metrics.legacyAcquisitions.get()).values.filter((v) => v.labels.pool_role === 'reader' && v.labels.outcome === 'timeout');
    const sum = (vs: Awaited<ReturnType<typeof readerTimeouts>>) => vs.reduce((a, v) => a + v.value, 0);
    const before = sum(await readerTimeouts()); // read now: prom-client hands out its live sample objects
    metrics.acquireEnd({ poolRole: 'reader', operation: 'subscription_history' }, 'timeout', 0.15, true);
    metrics.acquireEnd({ poolRole: 'reader', operation: 'authorization' }, 'timeout', 0.15, true);
    const after = await readerTimeouts();
    expect(sum(after) - before).toBe(2);
    expect(after.map((v) => v.labels.operation).sort()).toEqual(expect.arrayContaining(['authorization', 'subscription_history']));
  });

  it('publishes exactly 16 per-role pool series across the four roles', async () => {
    metrics.publishPools({ writer: { total: 3, idle: 1, max: 20 } });
    const conn = (await register.getSingleMetric('buzz_db_pool_connections')!.get()).values;
    const max = (await register.getSingleMetric('buzz_db_pool_max_connections')!.get()).values;
    const configured = (await register.getSingleMetric('buzz_db_pool_configured')!.get()).values;
    expect(conn.length + max.length + configured.length).toBe(POOL_ROLES.length * 4);
    expect(conn.find((v) => v.labels.pool_role === 'writer' && v.labels.state === 'active')?.value).toBe(2);
    expect(configured.find((v) => v.labels.pool_role === 'reader')?.value).toBe(0);
  });
});

describe('source policy (seed 001)', () => {
  it('the fence probe never takes a serving-writer checkout and runs on the probe pool', () => {
    const probe = readFileSync(new URL('../replica-fence/fence-probe.ts', import.meta.url), 'utf8');
    const service = readFileSync(new URL('../replica-fence/replica-fence.service.ts', import.meta.url), 'utf8');
    expect(probe).not.toMatch(/writerPool|acquireWriter|\.writer\b/);
    expect(service).toMatch(/probeOnce\(this\.probePool\(\)/);
    expect(service).toMatch(/rotateEpoch\(this\.probePool\(\)\)/);
    // The fence's serving-writer checkouts are its start-up checks (the privileges, the floor
    // guard), each labelled bootstrap; none is taken per beat.
    const checkouts = service.match(/acquireWriter\([^)]*\)/g) ?? [];
    expect(checkouts.length).toBeGreaterThan(0);
    expect(checkouts.filter((c) => c !== "acquireWriter('bootstrap')")).toEqual([]);
  });
});

describe('source policy (issue 20): every serving-writer use is a labelled checkout', () => {
  it('no code outside src/database reaches the unlabelled writer handle (DatabaseService.writer)', () => {
    const root = new URL('../', import.meta.url);
    const files = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.startsWith('database/'));
    const offenders = files.filter((f) => /\b(db|database)\.writer\b(?!Pool|Reachable|Read)/.test(readFileSync(new URL(f, root), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
