/** An ingest refusal: `message` is the NIP-01 prefixed reason sent in `["OK", id, false, message]`. */
export class Rejection extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Rejection';
  }
}

export function reject(message: string): never {
  throw new Rejection(message);
}

/**
 * The answer of each write path whose named event is missing. An event the writer may not read
 * gets the same answer (TargetVisibility.seen), so none of these tells whether an id exists in a
 * private channel.
 */
export const TARGET_NOT_FOUND = {
  reaction: 'invalid: reaction target event not found',
  threadParent: 'invalid: thread parent event not found',
  comment: 'invalid: comment parent event not found',
  edit: 'invalid: edited message not found',
  report: 'invalid: report target event not found',
} as const;
