/**
 * The storm bench's arithmetic (bench/lib/storm-stats.ts): what it reads from two /metrics
 * scrapes and the relay's log must be right, or its figures mean nothing.
 */
import { backoffMs, bucketDelta, counterDelta, deltaBy, histogramQuantile, parseSamples, tallyLogLines } from '../../bench/lib/storm-stats.js';

const before = parseSamples(`# HELP buzz_db_route_decision Routed read decisions
# TYPE buzz_db_route_decision counter
buzz_db_route_decision{path="req_historical",decision="replica",reason="fresh"} 10
buzz_db_route_decision{path="req_historical",decision="writer",reason="reader_acquire_timeout"} 2
buzz_db_pool_acquire_duration_seconds_bucket{le="0.1",pool_role="writer",operation="authorization"} 5
buzz_db_pool_acquire_duration_seconds_bucket{le="1",pool_role="writer",operation="authorization"} 5
buzz_db_pool_acquire_duration_seconds_bucket{le="+Inf",pool_role="writer",operation="authorization"} 5
buzz_db_pool_acquire_duration_seconds_bucket{le="0.1",pool_role="reader",operation="authorization"} 7
buzz_db_pool_acquire_duration_seconds_bucket{le="+Inf",pool_role="reader",operation="authorization"} 7
nodejs_eventloop_lag_p99_seconds 0.012
`);
const after = parseSamples(`buzz_db_route_decision{path="req_historical",decision="replica",reason="fresh"} 40
buzz_db_route_decision{path="req_historical",decision="writer",reason="reader_acquire_timeout"} 9
buzz_db_route_decision{path="req_historical",decision="writer",reason="stale"} 1
buzz_db_route_decision{path="bridge_query",decision="writer",reason="stale"} 3
buzz_db_pool_acquire_duration_seconds_bucket{le="0.1",pool_role="writer",operation="authorization"} 95
buzz_db_pool_acquire_duration_seconds_bucket{le="1",pool_role="writer",operation="authorization"} 105
buzz_db_pool_acquire_duration_seconds_bucket{le="+Inf",pool_role="writer",operation="authorization"} 105
buzz_db_pool_acquire_duration_seconds_bucket{le="0.1",pool_role="writer",operation="subscription_history"} 0
buzz_db_pool_acquire_duration_seconds_bucket{le="1",pool_role="writer",operation="subscription_history"} 0
buzz_db_pool_acquire_duration_seconds_bucket{le="+Inf",pool_role="writer",operation="subscription_history"} 100
buzz_db_pool_acquire_duration_seconds_bucket{le="0.1",pool_role="reader",operation="authorization"} 900
buzz_db_pool_acquire_duration_seconds_bucket{le="+Inf",pool_role="reader",operation="authorization"} 900
`);

describe('storm bench statistics', () => {
  it('parses labels and values, and counts a counter delta over matching series only', () => {
    expect(before.find((s) => s.name === 'nodejs_eventloop_lag_p99_seconds')?.value).toBe(0.012);
    expect(counterDelta(before, after, 'buzz_db_route_decision', { path: 'req_historical', decision: 'writer' })).toBe(8);
    expect(counterDelta(before, after, 'buzz_db_route_decision', { decision: 'replica' })).toBe(30);
  });

  it('breaks a delta down by labels, leaving out series that did not move', () => {
    expect(deltaBy(before, after, 'buzz_db_route_decision', { decision: 'writer' }, ['path', 'reason'])).toEqual({
      'req_historical/reader_acquire_timeout': 7,
      'bridge_query/stale': 3,
      'req_historical/stale': 1,
    });
  });

  it('subtracts histogram buckets per bound, summed over the matching series, and takes the quantile inside the bucket', () => {
    const writer = bucketDelta(before, after, 'buzz_db_pool_acquire_duration_seconds', { pool_role: 'writer' });
    expect(writer).toEqual([
      { le: 0.1, count: 90 },
      { le: 1, count: 100 },
      { le: Number.POSITIVE_INFINITY, count: 200 },
    ]);
    // The median (rank 100) is the top of the 0.1..1 bucket; rank 45 is half-way into the first.
    expect(histogramQuantile(0.5, writer)).toBe(1);
    expect(histogramQuantile(0.225, writer)).toBeCloseTo(0.05);
    // A quantile in +Inf reports the highest finite bound, a floor.
    expect(histogramQuantile(0.99, writer)).toBe(1);
    expect(histogramQuantile(0.99, [])).toBeNaN();
  });

  it('backs off 250 ms × 2^attempt, jittered to between half and one and a half of it', () => {
    expect(backoffMs(0, 250, 0.5)).toBe(250);
    expect(backoffMs(3, 250, 0)).toBe(1000);
    expect(backoffMs(5, 250, 0.999)).toBeLessThan(12_000);
    expect(backoffMs(5, 250, 0.999)).toBeGreaterThan(11_900);
  });

  it("tallies the relay's pino lines by level and message, with the error's message", () => {
    const out = [
      '{"level":40,"msg":"reader pool acquire timed out; routing to writer"}',
      'buzz-relay listening on ws://localhost:1',
      '{"level":50,"msg":"channel access lookup failed","err":{"message":"timeout exceeded when trying to connect"}}',
      '{"level":40,"msg":"reader pool acquire timed out; routing to writer"}',
      '{"level":40,"msg":"Historical query failed","err":"history read cap reached"}',
      '{"level":50,"msg":"chan',
    ].join('\n');
    expect(tallyLogLines(out)).toEqual({
      'warn reader pool acquire timed out; routing to writer': 2,
      'error channel access lookup failed: timeout exceeded when trying to connect': 1,
      'warn Historical query failed: history read cap reached': 1,
    });
  });
});
