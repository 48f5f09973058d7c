import { Controller, Get, Header, Inject, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { RelaySigner } from '../common/relay-signer.js';
import { MAX_SUBSCRIPTIONS } from '../subscriptions/req.handler.js';
import { TenancyService } from '../tenancy/tenancy.service.js';
import { hostHeader } from '../common/host.js';

export const RELAY_VERSION = '0.1.0';

/** relay.md §1.2 design choice: the upstream base list plus what this relay implements (9, 45, 56). */
const SUPPORTED_NIPS = [1, 2, 9, 10, 11, 16, 17, 23, 25, 29, 33, 38, 42, 45, 50, 56];
/** NIP-43 relay membership: advertised only when it is enforced and the relay key is stable. */
const NIP43 = 43;

/** NIP-11 on `GET /` (content-negotiated) and `GET /info`. */
@Controller()
export class Nip11Controller {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly signer: RelaySigner,
    private readonly tenancy: TenancyService,
  ) {}

  @Get()
  async root(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const accept = String(req.headers.accept ?? '');
    if (accept.includes('application/nostr+json')) {
      void reply.status(200).header('content-type', 'application/nostr+json').header('access-control-allow-origin', '*').send(JSON.stringify(await this.document(req)));
      return;
    }
    void reply.status(200).header('content-type', 'text/plain; charset=utf-8').send('Buzz relay: connect with a Nostr client over WebSocket.\n');
  }

  @Get('info')
  @Header('access-control-allow-origin', '*')
  info(@Req() req: FastifyRequest): Promise<Record<string, unknown>> {
    return this.document(req);
  }

  private async document(req: FastifyRequest): Promise<Record<string, unknown>> {
    const stableKey = this.config.relayPrivateKey !== undefined;
    const nips = this.config.requireRelayMembership && stableKey ? [...SUPPORTED_NIPS, NIP43].sort((a, b) => a - b) : SUPPORTED_NIPS;
    return {
      name: 'Buzz Relay',
      description: 'Buzz — private team communication relay',
      // The relay's own key in both: NIP-29 clients (nostr-tools nip29.loadGroup) ask for the
      // group state by `pubkey`, newer ones by `self`. It is stable when BUZZ_RELAY_PRIVATE_KEY is
      // set or the relay runs on its embedded database (kept in .data/relay.key); otherwise it is
      // this process's, and group state signed before a restart carries another.
      pubkey: this.signer.pubkey,
      contact: null,
      supported_nips: nips,
      supported_extensions: ['nip-er'],
      software: 'https://github.com/block/buzz',
      version: RELAY_VERSION,
      self: this.signer.pubkey,
      // Host-scoped (relay.md §6.2): the workspace icon of the request's community (kind 9033).
      ...(await this.hostScoped(req)),
      limitation: {
        max_message_length: this.config.limits.maxFrameBytes,
        max_subscriptions: MAX_SUBSCRIPTIONS,
        max_filters: 10,
        max_limit: 1000,
        max_subid_length: 256,
        min_pow_difficulty: null,
        auth_required: true,
        payment_required: false,
        restricted_writes: true,
        due_delivery_mode: 'push',
        max_not_before_delta: 31_536_000,
      },
    };
  }

  /** Fields of the request host's community; none for an unmapped host or a failed lookup. */
  private async hostScoped(req: FastifyRequest): Promise<Record<string, unknown>> {
    const tenant = await this.tenancy.resolve(hostHeader(req.raw.rawHeaders));
    return tenant.ok && tenant.community.icon !== null ? { icon: tenant.community.icon } : {};
  }
}
