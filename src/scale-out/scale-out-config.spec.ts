import { ConfigError, loadConfig } from '../config/app-config.js';

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems];
    throw e;
  }
}

describe('scale-out configuration', () => {
  it('defaults to a single pod with no Redis', () => {
    expect(loadConfig({}).scaleOut).toEqual({ redisUrl: undefined, presenceTtlSecs: 120, redisFailMode: 'closed',
      shutdownDrainMs: 8000,
      gapFillMaxEvents: 10_000,
      gapFillWindowSecs: 300,
    });
  });

  it('accepts redis: and rediss: URLs only', () => {
    expect(loadConfig({ BUZZ_REDIS_URL: 'redis://cache:6379/0' }).scaleOut.redisUrl).toBe('redis://cache:6379/0');
    expect(loadConfig({ BUZZ_REDIS_URL: 'rediss://cache:6380' }).scaleOut.redisUrl).toBe('rediss://cache:6380');
    expect(problemsOf({ BUZZ_REDIS_URL: 'http://cache:6379' })).toEqual(['BUZZ_REDIS_URL must use scheme redis: or rediss:, got http:']);
  });

  it('keeps the presence TTL within 90..180 s unless the test hook overrides it', () => {
    expect(loadConfig({ BUZZ_PRESENCE_TTL_SECS: '90' }).scaleOut.presenceTtlSecs).toBe(90);
    expect(problemsOf({ BUZZ_PRESENCE_TTL_SECS: '60' })).toEqual(['BUZZ_PRESENCE_TTL_SECS must be an integer in 90..180, got "60"']);
    expect(loadConfig({ BUZZ_PRESENCE_TTL_SECS: '150', BUZZ_EPHEMERAL_TTL_OVERRIDE: '2' }).scaleOut.presenceTtlSecs).toBe(2);
    expect(problemsOf({ BUZZ_EPHEMERAL_TTL_OVERRIDE: '0' })).toEqual(['BUZZ_EPHEMERAL_TTL_OVERRIDE must be an integer in 1..180, got "0"']);
  });

  it('bounds the gap fill after a Redis reconnect', () => {
    expect(loadConfig({ BUZZ_REDIS_GAP_FILL_MAX_EVENTS: '0', BUZZ_REDIS_GAP_FILL_WINDOW_SECS: '900' }).scaleOut).toMatchObject({ gapFillMaxEvents: 0, gapFillWindowSecs: 900 });
    expect(problemsOf({ BUZZ_REDIS_GAP_FILL_WINDOW_SECS: '30' })).toEqual(['BUZZ_REDIS_GAP_FILL_WINDOW_SECS must be an integer in 60..3600, got "30"']);
  });

  it('names the accepted Redis failure modes', () => {
    expect(loadConfig({ BUZZ_REDIS_FAIL_MODE: 'local' }).scaleOut.redisFailMode).toBe('local');
    expect(problemsOf({ BUZZ_REDIS_FAIL_MODE: 'open' })).toEqual(['BUZZ_REDIS_FAIL_MODE must be one of closed, local, got "open"']);
  });
});
