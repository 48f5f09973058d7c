/**
 * The clients of the membership and moderation tests: authenticated sockets on one relay, closed
 * together at the end, and signed commands that name their target in one `p` tag.
 */
import { type VerifiedEvent } from 'nostr-tools/pure';
import { Identity, RawClient } from '../harness/nostr-clients.js';

export const nowSecs = (): number => Math.floor(Date.now() / 1000);

export class CommandSession {
  private readonly clients: RawClient[] = [];

  constructor(private readonly wsUrl: () => string) {}

  /** An authenticated socket for `id`, closed by {@link closeAll}. */
  async connect(id: Identity): Promise<RawClient> {
    const c = await RawClient.authed(this.wsUrl(), id);
    this.clients.push(c);
    return c;
  }

  closeAll(): void {
    for (const c of this.clients.splice(0)) c.close();
  }
}

/** A command of `kind` signed by `id`, aimed at `target` (`["p", target]` first, then `tags`). */
export function cmd(id: Identity, kind: number, target: string, tags: string[][] = [], createdAt = nowSecs()): VerifiedEvent {
  return id.sign({ kind, created_at: createdAt, tags: [['p', target], ...tags] });
}
