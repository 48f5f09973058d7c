/**
 * The ws adapter on the HTTP port, with three changes: a browser page from an origin
 * BUZZ_CORS_ORIGINS does not list is refused with a plain-text 403 (WebSockets have no
 * CORS, so the relay checks `Origin` itself; clients that send none are not affected),
 * the tenant is bound before the upgrade completes (an unknown host gets a plain-text 404), and Nest's
 * `{event,data}` message binding is off because the gateway parses NIP-01 frames
 * itself (the default binding silently drops anything else).
 */
import { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { IncomingMessage } from 'node:http';
import { CorsPolicy, ORIGIN_NOT_ALLOWED } from '../common/cors-policy.js';
import { Community } from '../tenancy/community.repository.js';
import { TenancyService, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';

export interface BoundTenant {
  readonly community: Community;
  readonly host: string;
}

const TENANT = Symbol('buzzTenant');

export function tenantOf(req: IncomingMessage): BoundTenant | undefined {
  return (req as IncomingMessage & { [TENANT]?: BoundTenant })[TENANT];
}

type VerifyCallback = (result: boolean, code?: number, message?: string, headers?: Record<string, string>) => void;

export class RelayWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly tenancy: TenancyService,
    private readonly maxFrameBytes: number,
    private readonly cors: CorsPolicy,
  ) {
    super(app);
  }

  override create(port: number, options: Record<string, unknown> = {}) {
    return super.create(port, {
      ...options,
      // Frames up to 4x the cap are read so the client gets a NOTICE naming the
      // size; anything larger is cut off by ws itself (close 1009), bounding memory.
      maxPayload: this.maxFrameBytes * 4,
      perMessageDeflate: false,
      verifyClient: (info: { req: IncomingMessage }, done: VerifyCallback) => void this.admitUpgrade(info.req, done),
    });
  }

  override bindMessageHandlers(): void {
    // The gateway reads frames itself.
  }

  private async admitUpgrade(req: IncomingMessage, done: VerifyCallback): Promise<void> {
    if (!this.cors.allows(req.headers.origin)) {
      done(false, 403, ORIGIN_NOT_ALLOWED, { 'Content-Type': 'text/plain' });
      return;
    }
    const resolution = await this.tenancy.resolve(req.headers.host);
    if (!resolution.ok) {
      done(false, resolution.reason === 'empty_host' ? 400 : 404, UNKNOWN_HOST_MESSAGE, { 'Content-Type': 'text/plain' });
      return;
    }
    if (resolution.community.archived) {
      done(false, 404, UNKNOWN_HOST_MESSAGE, { 'Content-Type': 'text/plain' });
      return;
    }
    (req as IncomingMessage & { [TENANT]?: BoundTenant })[TENANT] = { community: resolution.community, host: resolution.host };
    done(true);
  }
}
