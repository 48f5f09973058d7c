import { Controller, Get, Header, Inject, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { MAX_SUBSCRIPTIONS } from '../subscriptions/req.handler.js';

export const RELAY_VERSION = '0.1.0';

/** NIP-11 on `GET /` (content-negotiated) and `GET /info`. */
@Controller()
export class Nip11Controller {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  @Get()
  root(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const accept = String(req.headers.accept ?? '');
    if (accept.includes('application/nostr+json')) {
      void reply.status(200).header('content-type', 'application/nostr+json').header('access-control-allow-origin', '*').send(JSON.stringify(this.document()));
      return;
    }
    void reply.status(200).header('content-type', 'text/plain; charset=utf-8').send('Buzz relay: connect with a Nostr client over WebSocket.\n');
  }

  @Get('info')
  @Header('access-control-allow-origin', '*')
  info(): Record<string, unknown> {
    return this.document();
  }

  private document(): Record<string, unknown> {
    return {
      name: 'Buzz Relay',
      description: 'Buzz — private team communication relay',
      pubkey: null,
      contact: null,
      supported_nips: [1, 9, 10, 11, 16, 33, 42, 45, 98],
      supported_extensions: ['nip-er'],
      software: 'https://github.com/block/buzz',
      version: RELAY_VERSION,
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
}
