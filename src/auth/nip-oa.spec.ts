import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { mintAuthTag } from '../../test/harness/nip-oa-tag.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { ownerProof, parseConditions, verifyAuthTag } from './nip-oa.js';

const ownerSk = generateSecretKey();
const owner = getPublicKey(ownerSk);
const agentSk = generateSecretKey();
const agent = getPublicKey(agentSk);
const now = Math.floor(Date.now() / 1000);

function authEvent(tags: string[][]): NostrEvent {
  return finalizeEvent({ kind: 22242, created_at: now, tags: [['relay', 'ws://localhost'], ['challenge', 'c'], ...tags], content: '' }, agentSk) as NostrEvent;
}

describe('NIP-OA auth tags', () => {
  it('proves the owner of a well-signed tag, with and without conditions', () => {
    expect(verifyAuthTag(mintAuthTag(ownerSk, agent), agent, now)).toEqual({ kind: 'owner', owner });
    const conditions = `kind=9&created_at>${now - 10}&created_at<${now + 10}`;
    expect(verifyAuthTag(mintAuthTag(ownerSk, agent, conditions), agent, now)).toEqual({ kind: 'owner', owner });
  });

  it('binds the signature to the agent and to the conditions as sent', () => {
    const other = getPublicKey(generateSecretKey());
    expect(verifyAuthTag(mintAuthTag(ownerSk, other), agent, now)).toMatchObject({ kind: 'invalid', reason: 'signature does not verify' });
    const tag = mintAuthTag(ownerSk, agent, 'kind=9');
    expect(verifyAuthTag(['auth', tag[1], 'kind=1', tag[3]], agent, now)).toMatchObject({ kind: 'invalid', reason: 'signature does not verify' });
    // Another owner key claiming the same signature.
    expect(verifyAuthTag(['auth', getPublicKey(generateSecretKey()), tag[2], tag[3]], agent, now)).toMatchObject({ kind: 'invalid' });
  });

  it('treats created_at clauses as the validity period of the AUTH', () => {
    expect(verifyAuthTag(mintAuthTag(ownerSk, agent, `created_at<${now}`), agent, now)).toMatchObject({ kind: 'invalid', reason: 'outside the attestation validity period' });
    expect(verifyAuthTag(mintAuthTag(ownerSk, agent, `created_at>${now}`), agent, now)).toMatchObject({ kind: 'invalid' });
    expect(verifyAuthTag(mintAuthTag(ownerSk, agent, `created_at<${now + 1}`), agent, now)).toEqual({ kind: 'owner', owner });
  });

  it.each([
    [['auth', 'x'], 'an auth tag has exactly four elements'],
    [['auth', 'A'.repeat(64), '', 'a'.repeat(128)], 'owner must be 64 lowercase hex'],
    [['auth', 'a'.repeat(64), '', 'a'.repeat(127)], 'signature must be 128 lowercase hex'],
  ])('refuses the malformed tag %j', (tag, reason) => {
    expect(verifyAuthTag(tag, agent, now)).toEqual({ kind: 'invalid', reason });
  });

  it('refuses a self-attestation and an owner key that is not a curve point', () => {
    expect(verifyAuthTag(mintAuthTag(agentSk, agent), agent, now)).toEqual({ kind: 'invalid', reason: 'owner and agent must differ' });
    expect(verifyAuthTag(['auth', 'f'.repeat(64), '', 'a'.repeat(128)], agent, now)).toMatchObject({ kind: 'invalid' });
  });

  it.each(['kind=01', 'kind=65536', 'kind=-1', 'created_at<4294967296', 'kind=1&', '&kind=1', 'kind=1&&kind=2', 'kind = 1', 'pubkey=abc', 'kind='])(
    'refuses the conditions %j',
    (conditions) => {
      expect(typeof parseConditions(conditions)).toBe('string');
    },
  );

  it('needs exactly one auth tag on the AUTH event', () => {
    expect(ownerProof(authEvent([]))).toEqual({ kind: 'none' });
    expect(ownerProof(authEvent([mintAuthTag(ownerSk, agent)]))).toEqual({ kind: 'owner', owner });
    expect(ownerProof(authEvent([mintAuthTag(ownerSk, agent), mintAuthTag(ownerSk, agent)]))).toEqual({ kind: 'none' });
  });
});
