import { HttpError } from '../common/http-error.js';
import type { IngestResult } from '../events/ingest.service.js';
import type { Refusal, RefusalCode } from '../nostr/refusal.js';

/**
 * HTTP's reading of a refusal (relay.md §3.2): what the WebSocket says with `OK false` or
 * `CLOSED`, said with a status chosen by the refusal's code. `duplicate` is a 200: the event is
 * stored already. `pow` and `mute` are never given here; they are 400 like any reason without a
 * known code was.
 */
const REFUSAL_STATUS: Readonly<Record<RefusalCode, number>> = {
  duplicate: 200,
  invalid: 400,
  pow: 400,
  mute: 400,
  'auth-required': 401,
  blocked: 403,
  restricted: 403,
  'rate-limited': 429,
  error: 500,
};

export function refusalStatus(refusal: Refusal): number {
  return REFUSAL_STATUS[refusal.code];
}

/** A refusal as the bridge throws it: its status, and its reason text as the `{"error": …}` body. */
export function refusalError(refusal: Refusal): HttpError {
  return new HttpError(refusalStatus(refusal), refusal.wire);
}

/**
 * The status of an ingest outcome on `POST /events`: 200 when stored or already stored (the `OK`
 * fields as JSON), else its refusal's. Internal failures are not results: they are thrown and
 * HttpErrorFilter maps them (503/500).
 */
export function ingestStatus(result: IngestResult): number {
  return result.accepted ? 200 : refusalStatus(result.refusal);
}
