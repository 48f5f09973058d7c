import { startBanner, withoutPassword } from './start-banner.js';

describe('startBanner', () => {
  const embedded = {
    wsUrl: 'ws://localhost:3000',
    metricsUrl: 'http://127.0.0.1:9102/metrics',
    writerUrl: 'postgres://postgres@127.0.0.1:41001/buzz',
    readerUrl: 'postgres://postgres@127.0.0.1:41002/buzz',
    embeddedDir: '/home/me/buzz-relay/.data/pg',
  };

  it('names the URLs, the embedded pair and three runnable next commands', () => {
    const text = startBanner(embedded);
    expect(text).toContain('ws://localhost:3000');
    expect(text).toContain('http://localhost:3000');
    expect(text).toContain('http://127.0.0.1:9102/metrics');
    expect(text).toContain('data in /home/me/buzz-relay/.data/pg');
    expect(text).toContain('reader postgres://postgres@127.0.0.1:41002/buzz');
    expect(text).toMatch(/create a channel +npm run create-channel -- general\n/);
    expect(text).toMatch(/add a member +npm run admin -- add-member <npub>\n/);
    expect(text).toContain('docs/moderation.md');
    expect(text.split('\n').every((l) => !l.startsWith('{'))).toBe(true);
  });

  it('points the commands at another port, and never prints a password', () => {
    const text = startBanner({ wsUrl: 'ws://localhost:4100', metricsUrl: 'http://127.0.0.1:9102/metrics', writerUrl: 'postgres://app:s3cret@db.internal:5432/buzz' });
    expect(text).toMatch(/create a channel +RELAY_URL=ws:\/\/localhost:4100 npm run create-channel -- general\n/);
    expect(text).toContain('writer postgres://app:***@db.internal:5432/buzz');
    expect(text).toContain('reader none');
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('DATABASE_URL=postgres');
  });
});

describe('withoutPassword', () => {
  it('masks only the password', () => {
    expect(withoutPassword('postgres://u:p@h:1/d?sslmode=require')).toBe('postgres://u:***@h:1/d?sslmode=require');
    expect(withoutPassword('postgres://u@h/d')).toBe('postgres://u@h/d');
    expect(withoutPassword('not a url')).toBe('(unparsable URL)');
  });
});
