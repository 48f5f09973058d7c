/**
 * What a handler learned about an HTTP request that its one log line should carry (relay.md §3.1
 * step 8): the community and pubkey once admission bound them, the result, and the error behind a
 * 500. Kept beside the request, never on it, so nothing here reaches a reply.
 */
import type { FastifyRequest } from 'fastify';

export interface RequestAnnotations {
  community?: string;
  pubkey?: string;
  result_count?: number;
  accepted?: boolean;
  kind?: number;
  /** The relay's own label for a failure (never text taken from the request). */
  reason?: string;
  /** The cause of a 500, logged through pino's err serializer. */
  err?: unknown;
}

const annotations = new WeakMap<object, RequestAnnotations>();
const observed = new WeakSet<object>();

/** Marks a request whose one log line the relay's HTTP observer writes (it then carries the annotations). */
export function markObserved(req: FastifyRequest): void {
  observed.add(req);
}

export function isObserved(req: FastifyRequest): boolean {
  return observed.has(req);
}

export function annotateRequest(req: FastifyRequest, fields: RequestAnnotations): void {
  annotations.set(req, { ...annotations.get(req), ...fields });
}

export function requestAnnotations(req: FastifyRequest): RequestAnnotations {
  return annotations.get(req) ?? {};
}
