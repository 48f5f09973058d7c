import { Inject, Injectable } from '@nestjs/common';
import { checkAuthEvent } from '../auth/nip42.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { parseEvent } from '../events/event-validation.js';
import { SignatureVerifier } from '../events/signature-verifier.js';
import { RelayMetrics } from '../metrics/relay-metrics.service.js';
import { RelayConnection } from './relay-connection.js';

/**
 * NIP-42. Exactly one terminal outcome per connection; later AUTH frames are
 * answered without changing it. Frames that arrive while an AUTH is being
 * verified wait for it (AUTH runs inline, one frame at a time).
 */
@Injectable()
export class AuthHandler {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verifier: SignatureVerifier,
    private readonly metrics: RelayMetrics,
  ) {}

  handle(conn: RelayConnection, raw: unknown): Promise<void> {
    const run = (conn.pendingAuth ?? Promise.resolve()).then(() => this.authenticate(conn, raw));
    conn.pendingAuth = run.catch(() => undefined);
    return conn.pendingAuth;
  }

  private async authenticate(conn: RelayConnection, raw: unknown): Promise<void> {
    const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id : '';
    if (conn.authState !== 'pending') {
      const reason = conn.authState === 'authenticated' ? 'already authenticated' : 'authentication already failed';
      conn.send(['OK', id, false, `auth-required: ${reason}`]);
      return;
    }
    const parsed = parseEvent(raw);
    const valid =
      parsed.ok &&
      checkAuthEvent(parsed.event, {
        challenge: conn.challenge,
        tenantHost: conn.host,
        scheme: this.config.relayUrl.startsWith('wss://') ? 'wss:' : 'ws:',
        nowSecs: Math.floor(Date.now() / 1000),
      }) &&
      (await this.verifier.verify(parsed.event)).ok;
    if (!valid || !parsed.ok) {
      conn.authState = 'failed';
      this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'invalid' });
      conn.send(['OK', id, false, 'auth-required: verification failed']);
      return;
    }
    conn.authState = 'authenticated';
    conn.pubkey = parsed.event.pubkey;
    this.metrics.authOutcomes.inc({ method: 'nip42', outcome: 'success' });
    this.metrics.wsAuthenticatedActive.inc();
    conn.log.debug({ connId: conn.id }, 'NIP-42 auth successful');
    conn.send(['OK', parsed.event.id, true, '']);
  }
}
