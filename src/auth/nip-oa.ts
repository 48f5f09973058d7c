/**
 * NIP-OA owner attestation: an agent's event carries `["auth", <owner>, <conditions>, <sig>]`,
 * where `sig` is the owner's BIP-340 signature over SHA-256 of the UTF-8 string
 * `nostr:agent-auth:<agent pubkey>:<conditions>`. The relay uses it at NIP-42 AUTH (relay.md §2.5):
 * an owner ban cascades to the agent, and with `BUZZ_ALLOW_NIP_OA_AUTH` an agent whose owner is a
 * relay member is admitted "via owner". Format and checks: docs/nip-oa.md.
 *
 * - `owner` and `sig` are lowercase hex (64 and 128 characters); the owner differs from the agent
 *   (a self-attestation proves nothing).
 * - `conditions` is empty, or `&`-joined clauses `kind=<n>`, `created_at<<t>`, `created_at><t>` in
 *   canonical decimal (no sign, no leading zero; kind ≤ 65535, t ≤ 4294967295), no whitespace.
 *   It is hashed exactly as sent.
 * - At AUTH the `created_at` clauses are evaluated against the AUTH event's `created_at`, which the
 *   relay already holds to ±60 s of its clock: they work as the attestation's validity period.
 *   `kind` clauses limit which events the owner vouches for, not sessions; they are checked for
 *   form only.
 * - "Exactly one": an AUTH event with two or more `auth` tags proves no owner.
 */
import { createHash } from 'node:crypto';
import * as ecc from 'tiny-secp256k1';
import { NostrEvent } from '../nostr/nostr.types.js';
import { isHex128, isHex64 } from '../nostr/hex.js';

export const AUTH_TAG_PREFIX = 'nostr:agent-auth:';
const CANONICAL_DECIMAL = /^(0|[1-9][0-9]*)$/;
const KIND_MAX = 65_535;
const TIMESTAMP_MAX = 4_294_967_295;

type Clause = { readonly field: 'kind'; readonly value: number } | { readonly field: 'created_at'; readonly op: '<' | '>'; readonly value: number };

/** The owner an event's single `auth` tag proves: `none` without exactly one tag, `invalid` when it does not verify. */
export type OwnerProof = { readonly kind: 'none' } | { readonly kind: 'invalid'; readonly reason: string } | { readonly kind: 'owner'; readonly owner: string };

export function ownerProof(ev: NostrEvent): OwnerProof {
  const tags = ev.tags.filter((t) => t[0] === 'auth');
  if (tags.length !== 1) return { kind: 'none' };
  return verifyAuthTag(tags[0], ev.pubkey, ev.created_at);
}

/** Verifies one `auth` tag for `agent`; `at` is the created_at its time clauses are evaluated against. */
export function verifyAuthTag(tag: readonly string[], agent: string, at: number): OwnerProof {
  if (tag.length !== 4) return invalid('an auth tag has exactly four elements');
  const [, owner, conditions, sig] = tag;
  if (!isHex64(owner)) return invalid('owner must be 64 lowercase hex');
  if (!isHex128(sig)) return invalid('signature must be 128 lowercase hex');
  if (owner === agent) return invalid('owner and agent must differ');
  const clauses = parseConditions(conditions);
  if (typeof clauses === 'string') return invalid(clauses);
  const expired = clauses.find((c) => c.field === 'created_at' && !(c.op === '<' ? at < c.value : at > c.value));
  if (expired) return invalid('outside the attestation validity period');
  const digest = createHash('sha256').update(`${AUTH_TAG_PREFIX}${agent}:${conditions}`, 'utf8').digest();
  let valid: boolean;
  try {
    valid = ecc.verifySchnorr(digest, Buffer.from(owner, 'hex'), Buffer.from(sig, 'hex'));
  } catch {
    valid = false; // an owner key that is not a curve point
  }
  return valid ? { kind: 'owner', owner } : invalid('signature does not verify');
}

/** The clauses of a conditions string, or why it is malformed. */
export function parseConditions(conditions: string): Clause[] | string {
  if (conditions === '') return [];
  if (/\s/.test(conditions)) return 'conditions must not contain whitespace';
  const out: Clause[] = [];
  for (const clause of conditions.split('&')) {
    const m = /^(kind=|created_at<|created_at>)(.*)$/.exec(clause);
    if (!m) return `unsupported condition ${JSON.stringify(clause)}`;
    const max = m[1] === 'kind=' ? KIND_MAX : TIMESTAMP_MAX;
    if (!CANONICAL_DECIMAL.test(m[2]) || Number(m[2]) > max) return `condition ${JSON.stringify(clause)} needs a canonical decimal up to ${max}`;
    out.push(m[1] === 'kind=' ? { field: 'kind', value: Number(m[2]) } : { field: 'created_at', op: m[1] === 'created_at<' ? '<' : '>', value: Number(m[2]) });
  }
  return out;
}

function invalid(reason: string): OwnerProof {
  return { kind: 'invalid', reason };
}
