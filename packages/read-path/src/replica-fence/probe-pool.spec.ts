import { endPool, POOL_MAX_LIFETIME_SECS } from '../database/pools.js';
import { createProbePool } from './probe-pool.js';
import { PROBE_APPLICATION_NAME } from './replica-fence.constants.js';

const UNROUTABLE = 'postgres://buzz:pw@10.255.255.1:5432/buzz';

type Opts = { max: number; min: number; connectionTimeoutMillis: number; maxLifetimeSeconds: number; application_name?: string; options?: string; onConnect?: unknown };
const opts = (p: { options: unknown }) => p.options as Opts;

describe('probe pool', () => {
  it('the fence-probe pool is lazy, one connection, named, with its own session timeouts (seed 001)', async () => {
    const pool = createProbePool(UNROUTABLE, () => undefined);
    expect(pool.totalCount).toBe(0);
    expect(opts(pool)).toMatchObject({
      max: 1,
      min: 0,
      connectionTimeoutMillis: 2000,
      maxLifetimeSeconds: POOL_MAX_LIFETIME_SECS,
      application_name: PROBE_APPLICATION_NAME,
    });
    expect(opts(pool).onConnect).toBeUndefined(); // not the writer hook
    expect(opts(pool).options).toBe('-c lock_timeout=1000 -c statement_timeout=2000 -c idle_in_transaction_session_timeout=2000');
    await endPool(pool);
  });
});
