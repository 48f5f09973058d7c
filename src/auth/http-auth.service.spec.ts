import { loadConfig } from '../config/app-config.js';
import { HttpError } from '../common/http-error.js';
import type { SignatureVerifier } from '../events/signature-verifier.js';
import type { RedisService } from '../redis/redis.service.js';
import { HttpAuthService, HttpAuthRequest, isLoopback } from './http-auth.service.js';

const VICTIM = 'ab'.repeat(32);

/** The X-Pubkey path touches neither the verifier nor Redis; a NIP-98 attempt would. */
function service(env: NodeJS.ProcessEnv): HttpAuthService {
  return new HttpAuthService(loadConfig(env), {} as SignatureVerifier, {} as RedisService);
}

function request(remoteAddress: string | undefined): HttpAuthRequest {
  return { communityId: 'c', host: 'localhost', path: '/query', method: 'POST', rawBody: '[]', authorization: undefined, xPubkey: VICTIM, remoteAddress };
}

async function outcome(auth: HttpAuthService, remoteAddress: string | undefined): Promise<string> {
  try {
    return (await auth.authenticate(request(remoteAddress))).pubkey;
  } catch (e) {
    if (e instanceof HttpError) return `${e.status} ${e.message}`;
    throw e;
  }
}

describe('HttpAuthService: the X-Pubkey development header', () => {
  it('on the embedded default (no DATABASE_URL), trusts it from loopback clients only', async () => {
    const auth = service({});
    for (const addr of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(await outcome(auth, addr)).toBe(VICTIM);
    for (const addr of ['10.0.0.5', '::ffff:192.168.1.2', '2001:db8::1', undefined]) expect(await outcome(auth, addr)).toBe('401 missing Nostr auth');
  });

  it('with DATABASE_URL and the variable unset, trusts it from nobody, loopback included', async () => {
    expect(await outcome(service({ DATABASE_URL: 'postgres://db.example/buzz' }), '127.0.0.1')).toBe('401 missing Nostr auth');
  });

  it('with BUZZ_REQUIRE_AUTH_TOKEN=false, trusts it from anyone; with true, from nobody', async () => {
    expect(await outcome(service({ BUZZ_REQUIRE_AUTH_TOKEN: 'false', DATABASE_URL: 'postgres://db.example/buzz' }), '203.0.113.7')).toBe(VICTIM);
    expect(await outcome(service({ BUZZ_REQUIRE_AUTH_TOKEN: 'true' }), '127.0.0.1')).toBe('401 missing Nostr auth');
  });
});

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['128.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['127.0.0.1.evil', false],
    ['0:0:0:0:0:0:0:2', false],
  ])('%s → %s', (addr, expected) => {
    expect(isLoopback(addr)).toBe(expected);
  });
});
