import type { IngestResult } from '../events/ingest.service.js';

/**
 * The HTTP status of an ingest outcome on `POST /events` (relay.md §3.2): what the WebSocket says
 * with `OK`, said with a status. Stored, or already stored (`duplicate:`, accepted or not), is a
 * 200 with the `OK` fields as JSON; a refusal is an error status chosen by its reason prefix.
 * Internal failures are not results: they are thrown and HttpErrorFilter maps them (503/500).
 */
export function ingestStatus(result: IngestResult): number {
  if (result.accepted || result.message.startsWith('duplicate:')) return 200;
  const prefix = result.message.slice(0, result.message.indexOf(':') + 1);
  return REFUSAL_STATUS[prefix] ?? 400;
}

const REFUSAL_STATUS: Readonly<Record<string, number>> = {
  'invalid:': 400,
  'auth-required:': 401,
  'blocked:': 403,
  'restricted:': 403,
  'rate-limited:': 429,
  'error:': 500,
};
