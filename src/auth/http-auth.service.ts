import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { HttpError } from '../common/http-error.js';
import { isHex64 } from '../common/nostr.types.js';
import { SignatureVerifier } from '../events/signature-verifier.js';
import { checkNip98Event, decodeNostrAuthorization } from './nip98.js';

export const REPLAY_TTL_SECS = 120;
const REPLAY_MAX_ENTRIES = 100_000;

export interface HttpAuthRequest {
  readonly communityId: string;
  readonly host: string;
  readonly path: string;
  readonly method: string;
  readonly rawBody: string;
  readonly authorization: string | undefined;
  readonly xPubkey: string | undefined;
}

/**
 * Bridge authentication: NIP-98, or the `X-Pubkey` dev header when
 * BUZZ_REQUIRE_AUTH_TOKEN=false. Every failure is a 401 with the spec's text.
 * The replay set is per community and outlives the ±60 s acceptance window.
 */
@Injectable()
export class HttpAuthService {
  private readonly seen = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verifier: SignatureVerifier,
  ) {}

  async authenticate(req: HttpAuthRequest): Promise<string> {
    if (!req.authorization && !this.config.requireAuthToken && req.xPubkey !== undefined) {
      if (!isHex64(req.xPubkey)) throw new HttpError(401, 'invalid X-Pubkey hex');
      return req.xPubkey;
    }
    const decoded = decodeNostrAuthorization(req.authorization);
    if (!decoded.ok) throw new HttpError(401, decoded.error);
    const scheme = this.config.relayUrl.startsWith('wss://') ? 'https' : 'http';
    const failure = checkNip98Event(decoded.event, {
      url: `${scheme}://${req.host}${req.path}`,
      method: req.method,
      rawBody: req.rawBody,
      nowSecs: Math.floor(Date.now() / 1000),
    });
    if (failure) throw new HttpError(401, failure);
    const verdict = await this.verifier.verify(decoded.event);
    if (!verdict.ok) throw new HttpError(401, 'NIP-98: invalid signature');
    if (!this.markFresh(`${req.communityId}:${decoded.event.id}`)) throw new HttpError(401, 'NIP-98: replay detected');
    return decoded.event.pubkey;
  }

  private markFresh(key: string): boolean {
    const now = Date.now();
    const expires = this.seen.get(key);
    if (expires !== undefined && expires > now) return false;
    if (this.seen.size >= REPLAY_MAX_ENTRIES) this.evictExpired(now);
    this.seen.set(key, now + REPLAY_TTL_SECS * 1000);
    return true;
  }

  private evictExpired(now: number): void {
    for (const [k, exp] of this.seen) if (exp <= now) this.seen.delete(k);
    // Still full of live marks: refuse to grow; the oldest entries go first.
    for (const k of this.seen.keys()) {
      if (this.seen.size < REPLAY_MAX_ENTRIES) break;
      this.seen.delete(k);
    }
  }
}
