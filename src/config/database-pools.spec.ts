import { loadConfig } from './app-config.js';
import { relayDatabaseOptions } from '../relay-database.modules.js';
import { poolSettings } from '../../packages/read-path/src/database/database.options.js';
import { createReaderPool, createWriterPool, endPool, POOL_MAX_LIFETIME_SECS, READER_DIAL_TIMEOUT_MS } from '../../packages/read-path/src/database/pools.js';

const UNROUTABLE = 'postgres://buzz:pw@10.255.255.1:5432/buzz';

type Opts = { max: number; min: number; connectionTimeoutMillis: number; maxLifetimeSeconds: number; application_name?: string; options?: string; onConnect?: unknown };
const opts = (p: { options: unknown }) => p.options as Opts;

describe('pools', () => {
  const cfg = poolSettings(relayDatabaseOptions(loadConfig({ DATABASE_URL: UNROUTABLE, BUZZ_DB_READ_POOL_SIZE: '7' })));

  it('connect_read_pool_is_lazy_and_independently_sized', async () => {
    const pool = createReaderPool(cfg, UNROUTABLE, () => undefined);
    expect(pool.totalCount).toBe(0);
    expect(opts(pool)).toMatchObject({ max: 7, min: 0, connectionTimeoutMillis: READER_DIAL_TIMEOUT_MS, maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS });
    await endPool(pool);
  });

  it('writer_pool_safety_hook_is_single_and_composed', async () => {
    const pool = createWriterPool(cfg, UNROUTABLE, () => undefined);
    expect(typeof opts(pool).onConnect).toBe('function');
    expect(opts(pool)).toMatchObject({ max: 20, min: 2, connectionTimeoutMillis: 3000 });
    await endPool(pool);
  });
});

describe('BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS', () => {
  const load = (v?: string) => loadConfig({ DATABASE_URL: UNROUTABLE, ...(v === undefined ? {} : { BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS: v }) });
  it.each([
    [undefined, 500],
    ['300', 300],
    ['10000', 10000],
    ['  750 ', 750],
    ['', 500],
  ])('%p → %p', (raw, want) => {
    expect(load(raw).replica.probeIntervalMs).toBe(want);
  });
  it.each(['299', '10001', 'fast', '1.5'])('%p fails start-up naming the variable', (raw) => {
    expect(() => load(raw)).toThrow(/BUZZ_REPLICA_FENCE_PROBE_INTERVAL_MS/);
  });
});
