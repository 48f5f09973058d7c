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
