/**
 * Mints NIP-OA `auth` tags the way an owner's tooling does (docs/nip-oa.md): the owner's BIP-340
 * signature over SHA-256 of `nostr:agent-auth:<agent>:<conditions>`. Tests only: minting needs the
 * owner's secret key, which a relay never holds.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as ecc from 'tiny-secp256k1';

export function mintAuthTag(ownerSk: Uint8Array, agentPubkey: string, conditions = ''): string[] {
  const owner = Buffer.from(ecc.xOnlyPointFromScalar(ownerSk)).toString('hex');
  const digest = createHash('sha256').update(`nostr:agent-auth:${agentPubkey}:${conditions}`, 'utf8').digest();
  const sig = Buffer.from(ecc.signSchnorr(digest, ownerSk, randomBytes(32))).toString('hex');
  return ['auth', owner, conditions, sig];
}
