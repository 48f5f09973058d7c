/**
 * Stored data for the abuse scenarios, published through a relay started for seeding only (with
 * the benches' lifted quotas; the relay under test starts afterwards with the default ones).
 */
import { randomBytes } from 'node:crypto';
import { BenchConnection, toPublishItems } from './bench-connection.js';
import { fastSigner } from './fast-sign.js';
import { EXPENSIVE_TAG_NAMES, SEARCH_WORDS, type SeedKind } from './abuse-scenarios.js';

const TAGGED_EVENTS = 5000;
const TEXT_EVENTS = 6000;
const BIG_NOTES = 60;
const BIG_NOTE_BYTES = 250_000;
const FILLER = ['the', 'a', 'of', 'and', 'to', 'in', 'we', 'it', 'on', 'for'];

const pick = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)];

/** Publishes the seed; resolves with the author's pubkey (the large readers ask for its notes). */
export async function seed(relayUrl: string, kind: SeedKind): Promise<string | undefined> {
  if (kind === 'none') return undefined;
  const signer = fastSigner();
  const events =
    kind === 'big-notes'
      ? Array.from({ length: BIG_NOTES }, (_, i) => signer.sign(1, [], `${i} ${'x'.repeat(BIG_NOTE_BYTES)}`))
      : kind === 'tagged'
        ? Array.from({ length: TAGGED_EVENTS }, (_, i) =>
            signer.sign(1, [...EXPENSIVE_TAG_NAMES.map((name) => [name, randomBytes(32).toString('hex')]), ['e', randomBytes(32).toString('hex')]], `tagged note ${i}`),
          )
        : Array.from({ length: TEXT_EVENTS }, () => signer.sign(1, [], Array.from({ length: 16 }, (_, j) => (j % 3 === 0 ? pick(SEARCH_WORDS) : pick(FILLER))).join(' ')));
  const conn = await BenchConnection.open(relayUrl, signer.sk);
  try {
    const result = await conn.publishWindowed(toPublishItems(events), kind === 'big-notes' ? 4 : 64);
    if (result.accepted !== events.length) throw new Error(`seeding ${kind}: ${result.accepted}/${events.length} accepted: ${JSON.stringify(Object.fromEntries(result.reasons))}`);
  } finally {
    conn.close();
  }
  return signer.pubkey;
}
