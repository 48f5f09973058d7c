/**
 * The `/query` presence branch (relay.md §3.3 step 2): one relay-signed kind-20001 event per
 * pubkey in `authors` with a live presence entry, its content the stored status; no `authors`,
 * nothing. The subject is named by a `p` tag. An unreachable presence store is a 503, not
 * "nobody is here".
 */
import { Inject, Injectable } from '@nestjs/common';
import { HttpError } from '../common/http-error.js';
import { RelaySigner } from '../common/relay-signer.js';
import { NostrEvent, NostrFilter } from '../nostr/nostr.types.js';
import { PresenceService, PresenceUnavailableError } from '../redis/presence.service.js';

@Injectable()
export class BridgePresence {
  constructor(
    private readonly presence: PresenceService,
    @Inject(RelaySigner) private readonly signer: RelaySigner,
  ) {}

  async events(communityId: string, f: NostrFilter): Promise<NostrEvent[]> {
    try {
      const live = await this.presence.lookup(communityId, f.authors ?? []);
      return live.map(({ pubkey, status }) => this.signer.sign({ kind: 20001, tags: [['p', pubkey]], content: status }));
    } catch (err) {
      if (err instanceof PresenceUnavailableError) throw new HttpError(503, 'presence unavailable');
      throw err;
    }
  }
}
