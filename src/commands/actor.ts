/** Who runs a command: a signed event's author, or the operator CLI (owner authority, no key). */
import { Kysely } from 'kysely';
import { DB } from '@buzz-relay/read-path';
import { Authority, RelayAuthority } from '../moderation/relay-authority.service.js';

export type Actor = { readonly pubkey: string } | 'operator';

/** The key recorded for the actor: none for the operator. */
export function actorKey(actor: Actor): string | null {
  return actor === 'operator' ? null : actor.pubkey;
}

/** The actor's relay authority in the community; the operator acts as an owner. */
export async function authorityOf(authority: RelayAuthority, tx: Kysely<DB>, communityId: string, actor: Actor): Promise<Authority> {
  return actor === 'operator' ? 'owner' : (await authority.of(tx, communityId, actor.pubkey)).authority;
}
