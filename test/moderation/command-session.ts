/**
 * The clients of the membership and moderation tests: authenticated sockets on one relay, closed
 * together at the end, and signed commands that name their target in one `p` tag.
 */
import { randomUUID } from 'node:crypto';
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { httpRequest, Identity, RawClient } from '../harness/nostr-clients.js';

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

/**
 * A NIP-98 signed `GET` of `httpUrl + path`. The signed `u` is the URL without its query string,
 * or, with `withQuery`, the whole URL as NIP-98 says; the relay accepts both.
 */
export async function signedGet(id: Identity, httpUrl: string, path: string, withQuery = false): Promise<{ status: number; json: Record<string, unknown> }> {
  const u = withQuery ? `${httpUrl}${path}` : `${httpUrl}${path.split('?')[0]}`;
  const auth = finalizeEvent(
    { kind: 27235, created_at: nowSecs(), content: '', tags: [['u', u], ['method', 'GET'], ['nonce', randomUUID()]] },
    id.sk,
  );
  const res = await httpRequest(`${httpUrl}${path}`, { headers: { authorization: `Nostr ${Buffer.from(JSON.stringify(auth)).toString('base64')}` } });
  return { status: res.status, json: JSON.parse(res.body) as Record<string, unknown> };
}
