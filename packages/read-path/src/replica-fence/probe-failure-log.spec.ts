import { ProbeFailureLog } from './probe-failure-log.js';

describe('ProbeFailureLog', () => {
  it('warns on the first failure, then at most every 10 s, and reports recovery once', () => {
    const log = new ProbeFailureLog(10_000);
    expect(log.failed(0)).toEqual({ consecutiveFailures: 1, warn: true });
    expect(log.failed(500)).toEqual({ consecutiveFailures: 2, warn: false });
    expect(log.failed(9_999)).toEqual({ consecutiveFailures: 3, warn: false });
    expect(log.failed(10_000)).toEqual({ consecutiveFailures: 4, warn: true });
    expect(log.succeeded()).toBe(4);
    expect(log.succeeded()).toBe(0);
    expect(log.failed(10_100)).toEqual({ consecutiveFailures: 1, warn: true });
  });
});
