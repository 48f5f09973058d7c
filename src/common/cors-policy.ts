/**
 * Which browser origins may use the relay (`BUZZ_CORS_ORIGINS`, relay.md §7): with no list, any
 * origin; with a list, exactly those. The HTTP side answers CORS through Nest's `enableCors`
 * (@fastify/cors); the WebSocket upgrade has no CORS, so the ws adapter refuses an unlisted
 * `Origin` itself. A request without `Origin` is not from a browser page and is not affected.
 */
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

type CorsOptions = NonNullable<Parameters<NestFastifyApplication['enableCors']>[0]>;

/**
 * How long a browser may reuse a preflight answer. Chromium caps it at 2 h. Dropping an origin
 * from the list still takes effect at once: every actual response is checked by the browser
 * against its own `Access-Control-Allow-Origin`.
 */
export const CORS_MAX_AGE_SECS = 7200;

/**
 * The request headers a page may send: NIP-98, the body type and the NIP-OA tag. Not the
 * `X-Pubkey` dev header: no browser page names its pubkey with it (HttpAuthService ignores it on
 * any request with an `Origin`), so no page on another origin is let send it either.
 */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Auth-Tag'];

export const ORIGIN_NOT_ALLOWED = 'origin not allowed';

export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;

  constructor(origins: readonly string[]) {
    this.origins = new Set(origins);
  }

  /** True when a request with this `Origin` header (undefined = none sent) may proceed. */
  allows(origin: string | undefined): boolean {
    return origin === undefined || this.origins.size === 0 || this.origins.has(origin);
  }

  /**
   * Any origin: a fixed `*` (no credentials are ever allowed, so nothing varies by origin).
   * A list: the request's origin is echoed only when listed, always with `Vary: Origin`
   * (an array, even of one entry, makes @fastify/cors compare and add the Vary header).
   */
  options(): CorsOptions {
    return {
      origin: this.origins.size === 0 ? '*' : [...this.origins],
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: CORS_ALLOWED_HEADERS,
      maxAge: CORS_MAX_AGE_SECS,
      credentials: false,
      strictPreflight: true,
    };
  }
}
