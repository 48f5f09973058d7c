/**
 * A refusal as NIP-01 words it: the reason of `["OK", id, false, reason]` and of
 * `["CLOSED", subId, reason]` starts with a machine-readable code, a colon and a space, then text
 * for a person (`invalid: bad signature`). The relay decides a refusal as a value, code and
 * detail apart, and each transport renders it once: the WebSocket sends {@link Refusal.wire}, HTTP
 * chooses a status from the code. Nothing on the relay's side reads a code back out of the text.
 * Each feature keeps the refusals it gives in a catalogue file of its own (`*.refusals.ts`).
 */

/** NIP-01's machine-readable prefixes, and NIP-42's `auth-required`. */
export const REFUSAL_CODES = ['duplicate', 'pow', 'blocked', 'rate-limited', 'invalid', 'restricted', 'mute', 'error', 'auth-required'] as const;

export type RefusalCode = (typeof REFUSAL_CODES)[number];

const CODES: ReadonlySet<string> = new Set(REFUSAL_CODES);

export class Refusal {
  /** `<code>: <detail>`; `<code>:` alone when there is no detail (NIP-01's bare `duplicate:`). */
  readonly wire: string;

  constructor(
    readonly code: RefusalCode,
    readonly detail: string,
  ) {
    this.wire = detail === '' ? `${code}:` : `${code}: ${detail}`;
  }

  toString(): string {
    return this.wire;
  }
}

/**
 * What a reason received from a relay says, for a client reading the wire: its code and detail, or
 * undefined when it starts with no code of NIP-01.
 */
export function parseRefusal(reason: string): Refusal | undefined {
  const colon = reason.indexOf(':');
  const code = reason.slice(0, colon);
  if (colon < 0 || !CODES.has(code)) return undefined;
  return new Refusal(code as RefusalCode, reason.slice(reason[colon + 1] === ' ' ? colon + 2 : colon + 1));
}

/** An ingest refusal, thrown by a gate or a command: answered `["OK", id, false, refusal.wire]`. */
export class Rejection extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.wire);
    this.name = 'Rejection';
  }
}

/** Refuses the event being ingested, with a refusal of its feature's catalogue. */
export function reject(refusal: Refusal): never {
  throw new Rejection(refusal);
}
