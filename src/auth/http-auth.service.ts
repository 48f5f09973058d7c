import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { HttpError } from '../common/http-error.js';
import { isHex64 } from '../nostr/hex.js';
import { SignatureVerifier } from '../events/signature-verifier.js';
import { replayKey } from '../redis/redis-keys.js';
import { RedisService } from '../redis/redis.service.js';
import { TtlMap } from '../redis/ttl-map.js';
import { checkNip98Event, decodeNostrAuthorization } from './nip98.js';

export const REPLAY_TTL_SECS = 120;
const REPLAY_MAX_ENTRIES = 100_000;

export interface HttpAuthRequest {
  readonly communityId: string;
  readonly host: string;
  readonly path: string;
  /** The query string (`?…`, or empty): NIP-98's `u` may include it. */
  readonly query?: string;
  readonly method: string;
  readonly rawBody: string;
  readonly authorization: string | undefined;
  readonly xPubkey: string | undefined;
  /** The `Origin` header: set by browsers on cross-origin fetches and on every POST. */
  readonly origin?: string;
  /** The peer's address on the socket (no proxy header is believed). */
  readonly remoteAddress: string | undefined;
  /** NIP-98 must carry a `payload` tag (`POST /events`: the auth is bound to the event sent). */
  readonly requirePayload?: boolean;
}

export interface HttpIdentity {
  readonly pubkey: string;
  /** The NIP-98 event to mark in the replay set; absent for the `X-Pubkey` dev header. */
  readonly nip98EventId?: string;
}

/**
 * Bridge authentication: NIP-98, or the `X-Pubkey` dev header where config.xPubkeyTrust allows
 * it (an explicit BUZZ_REQUIRE_AUTH_TOKEN=false, or a loopback client of the embedded default)
 * and the request carries no `Origin` (no browser page).
 * An untrusted header is ignored: the request needs NIP-98 like any other. Every failure is a
 * 401 with the spec's text.
 * The replay set is per community and outlives the ±60 s acceptance window; it
 * lives in Redis when BUZZ_REDIS_URL is set (one set for every pod). The
 * in-process set is bounded: when full of live marks the oldest goes first.
 */
@Injectable()
export class HttpAuthService {
  private readonly seen = new TtlMap<true>(REPLAY_TTL_SECS * 1000, REPLAY_MAX_ENTRIES);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verifier: SignatureVerifier,
    private readonly redis: RedisService,
  ) {}

  /** Step 3 of relay.md §3.1. The replay mark (step 5) comes after admission: consumeReplay. */
  async authenticate(req: HttpAuthRequest): Promise<HttpIdentity> {
    if (!req.authorization && req.xPubkey !== undefined && this.trustsXPubkey(req)) {
      if (!isHex64(req.xPubkey)) throw new HttpError(401, 'invalid X-Pubkey hex');
      return { pubkey: req.xPubkey };
    }
    const decoded = decodeNostrAuthorization(req.authorization);
    if (!decoded.ok) throw new HttpError(401, decoded.error);
    const scheme = this.config.relayUrl.startsWith('wss://') ? 'https' : 'http';
    const failure = checkNip98Event(decoded.event, {
      url: `${scheme}://${req.host}${req.path}`,
      query: req.query,
      method: req.method,
      rawBody: req.rawBody,
      nowSecs: Math.floor(Date.now() / 1000),
      requirePayload: req.requirePayload,
    });
    if (failure) throw new HttpError(401, failure);
    const verdict = await this.verifier.verify(decoded.event);
    if (!verdict.ok) throw new HttpError(401, 'NIP-98: invalid signature');
    return { pubkey: decoded.event.pubkey, nip98EventId: decoded.event.id };
  }

  /**
   * A request with an `Origin` header comes from a browser page, which may be any site the
   * developer has open (on loopback too): it never names its pubkey with the header.
   */
  private trustsXPubkey(req: HttpAuthRequest): boolean {
    if (req.origin !== undefined) return false;
    const trust = this.config.xPubkeyTrust;
    return trust === 'always' || (trust === 'loopback' && isLoopback(req.remoteAddress));
  }

  /** Step 5: marks the NIP-98 event as used; a second use is a 401. The dev header has no replay check. */
  async consumeReplay(communityId: string, identity: HttpIdentity): Promise<void> {
    if (identity.nip98EventId === undefined) return;
    if (!(await this.markFresh(communityId, identity.nip98EventId))) throw new HttpError(401, 'NIP-98: replay detected');
  }

  /**
   * SET NX EX on the community-scoped mark: shared by every pod with BUZZ_REDIS_URL, in this
   * process otherwise. A Redis error fails closed, unless BUZZ_REDIS_FAIL_MODE=local, which
   * falls back to this pod's own set.
   */
  private async markFresh(communityId: string, eventId: string): Promise<boolean> {
    const key = replayKey(communityId, eventId);
    if (!this.redis.enabled) return this.seen.setIfAbsent(key, true);
    try {
      return (await this.redis.client().set(key, '1', 'EX', REPLAY_TTL_SECS, 'NX')) === 'OK';
    } catch {
      if (this.config.scaleOut.redisFailMode === 'local') return this.seen.setIfAbsent(key, true);
      throw new HttpError(401, 'NIP-98: replay check unavailable');
    }
  }
}

/** 127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6 (a dual-stack listener reports those). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}
