/**
 * The author's restriction lookup that ingest starts beside the signature check, with
 * stand-ins for the verifier, the moderation repository and the command executors: which kinds
 * start it, that the gate applies its answer after the verdict, and what a failed lookup does.
 */
import { jest } from '@jest/globals';
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure';
import { NostrEvent } from '../nostr/nostr.types.js';
import { ModerationRepository, Restriction } from '../moderation/moderation.repository.js';
import { IngestGates } from './ingest-gates.service.js';
import { IngestContext, IngestService } from './ingest.service.js';
import { KIND } from '../nostr/kinds.js';
import { SignatureVerifier, VerifyResult } from './signature-verifier.js';
import { INGEST_REFUSALS } from './ingest.refusals.js';
import { CommandRegistry } from './command-registry.js';

const author = generateSecretKey();
const ctx: IngestContext = { communityId: '00000000-0000-4000-8000-000000000001', transport: 'ws', author: getPublicKey(author) };
const sign = (kind: number, tags: string[][] = []): NostrEvent => finalizeEvent({ kind, created_at: Math.floor(Date.now() / 1000), tags, content: 'x' }, author);

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** An ingest pipeline whose signature verdict and restriction lookups the test answers by hand. */
function pipeline() {
  const verdict = deferred<VerifyResult>();
  const lookups: Array<Deferred<Restriction>> = [];
  const restrictionOf = jest.fn(() => {
    const lookup = deferred<Restriction>();
    lookups.push(lookup);
    return lookup.promise;
  });
  const command = { kinds: new Set([KIND.REPORT, KIND.MODERATION_UNTIMEOUT, KIND.RELAY_ADMIN_ADD_MEMBER]), execute: jest.fn(async () => '') };
  const commands = new CommandRegistry();
  commands.register(command);
  const metrics = { eventsReceived: { inc: () => undefined }, eventsRejected: { inc: () => undefined } };
  const verifier = { verify: () => verdict.promise } as unknown as SignatureVerifier;
  const gates = new IngestGates({ restrictionOf } as unknown as ModerationRepository, never(), never(), never(), never(), verifier);
  const service = new IngestService(gates, commands, never(), never(), never(), metrics as never);
  return { service, verdict, lookups, restrictionOf, command };
}

/** A dependency these paths never reach. */
function never(): never {
  return {} as never;
}

/** Lets pending rejections be reported (Node reports them after the microtask queue drains). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

describe('the restriction lookup beside the signature check', () => {
  it('starts before the verdict, and its ban is applied at the gate without a second lookup', async () => {
    const p = pipeline();
    const answer = p.service.ingest(sign(1), ctx);
    expect(p.restrictionOf).toHaveBeenCalledTimes(1);
    expect(p.restrictionOf).toHaveBeenCalledWith(ctx.communityId, expect.any(String));
    p.lookups[0].resolve({ kind: 'banned' });
    await settle();
    p.verdict.resolve({ ok: true });
    expect(await answer).toMatchObject({ accepted: false, message: 'blocked: you are banned from this community' });
    expect(p.restrictionOf).toHaveBeenCalledTimes(1);
  });

  it('a banned author with a bad signature is answered on the signature', async () => {
    const p = pipeline();
    const answer = p.service.ingest(sign(1), ctx);
    p.lookups[0].resolve({ kind: 'banned' });
    p.verdict.resolve({ ok: false, reason: INGEST_REFUSALS.badSignature });
    expect(await answer).toMatchObject({ accepted: false, message: 'invalid: bad signature' });
  });

  it('looks the session author up ahead for a gift wrap, and the wrap key only after the verdict', async () => {
    const p = pipeline();
    const wrapKey = generateSecretKey();
    const wrap = finalizeEvent({ kind: KIND.GIFT_WRAP, created_at: Math.floor(Date.now() / 1000), tags: [['p', 'a'.repeat(64)]], content: 'x' }, wrapKey);
    const answer = p.service.ingest(wrap, ctx);
    expect(p.restrictionOf.mock.calls).toEqual([[ctx.communityId, ctx.author]]);
    p.lookups[0].resolve({ kind: 'timed_out', untilSecs: 2_000_000_000 });
    p.verdict.resolve({ ok: true });
    await settle();
    expect(p.restrictionOf.mock.calls).toEqual([[ctx.communityId, ctx.author], [ctx.communityId, getPublicKey(wrapKey)]]);
    p.lookups[1].resolve({ kind: 'none' });
    expect(await answer).toMatchObject({ accepted: false, message: 'restricted: you are timed out until 2000000000' });
  });

  it('refuses a gift wrap whose signing key is banned, on any session', async () => {
    const p = pipeline();
    const answer = p.service.ingest(finalizeEvent({ kind: KIND.GIFT_WRAP, created_at: Math.floor(Date.now() / 1000), tags: [['p', 'a'.repeat(64)]], content: 'x' }, generateSecretKey()), ctx);
    p.lookups[0].resolve({ kind: 'none' });
    p.verdict.resolve({ ok: true });
    await settle();
    p.lookups[1].resolve({ kind: 'banned' });
    expect(await answer).toMatchObject({ accepted: false, message: 'blocked: you are banned from this community' });
  });

  it.each([KIND.REPORT, KIND.MODERATION_UNTIMEOUT, KIND.RELAY_ADMIN_ADD_MEMBER])('is not started for command kind %p, which runs without the moderation gate', async (kind) => {
    const p = pipeline();
    const answer = p.service.ingest(sign(kind, [['p', 'a'.repeat(64)]]), ctx);
    p.verdict.resolve({ ok: true });
    expect(await answer).toMatchObject({ accepted: true, message: '' });
    expect(p.command.execute).toHaveBeenCalledTimes(1);
    expect(p.restrictionOf).not.toHaveBeenCalled();
  });
});

describe('a failed restriction lookup', () => {
  it('for an event refused on its signature: the signature answers, and the failure is no unhandled rejection', async () => {
    const p = pipeline();
    const answer = p.service.ingest(sign(1), ctx);
    p.verdict.resolve({ ok: false, reason: INGEST_REFUSALS.badSignature });
    expect(await answer).toMatchObject({ accepted: false, message: 'invalid: bad signature' });
    p.lookups[0].reject(new Error('writer down'));
    await settle();
    await settle();
    expect(unhandled).toEqual([]);
  });

  it('for a valid event: ingest ends with the lookup’s own error at the gate, as without the look-ahead', async () => {
    const p = pipeline();
    const failure = new Error('writer down');
    const answer = p.service.ingest(sign(1), ctx);
    p.lookups[0].reject(failure);
    await settle();
    p.verdict.resolve({ ok: true });
    await expect(answer).rejects.toBe(failure);
    await settle();
    expect(unhandled).toEqual([]);
  });
});
