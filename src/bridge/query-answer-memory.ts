/**
 * The memory a `/query` answer holds, from its first rows until its response is written: a lease
 * on the reader's share of the `history` pool (absent: unbounded), which the query adds each
 * part's rows to as it keeps them, refusing the request when they do not fit.
 */
import { Injectable, Optional } from '@nestjs/common';
import { HISTORY_PAGE_LEASE_BYTES } from '../events/event-query.service.js';
import { eventHeapBytes } from '../events/stored-event.js';
import { MemoryBudget, MemoryLease, MemoryPool, MemoryRefusedError } from '../memory/memory-budget.js';
import { NostrEvent } from '../nostr/nostr.types.js';
import { HttpError } from '../common/http-error.js';

/** The answer to a `/query` whose rows alone pass the reader's share of the history pool: retrying cannot help. */
export const ANSWER_TOO_LARGE = 'answer too large: ask for fewer events (a smaller limit, or page through them)';

@Injectable()
export class QueryAnswerMemory {
  private readonly pool: MemoryPool | undefined;

  constructor(@Optional() memory?: MemoryBudget) {
    this.pool = memory?.pool('history');
  }

  /** An empty lease for one answer; the caller ends it when the response has been written. */
  lease(pubkey: string): MemoryLease | undefined {
    return this.pool && new MemoryLease(this.pool, 0, pubkey);
  }
}

/**
 * Adds rows to a `/query` answer's memory lease, or refuses the request when they do not fit:
 * 400 when the answer and the lease of the read still running for it are more than a key may
 * ever hold (no retry can succeed), else the memory refusal (429 or 503, `Retry-After`).
 */
export function holdAnswer(answer: MemoryLease | undefined, rows: readonly NostrEvent[]): void {
  if (answer === undefined || rows.length === 0) return;
  const bytes = rows.reduce((sum, ev) => sum + eventHeapBytes(ev), 0);
  const refused = answer.add(bytes);
  if (refused === undefined) return;
  if (answer.bytes + bytes + HISTORY_PAGE_LEASE_BYTES > answer.keyLimit) throw new HttpError(400, ANSWER_TOO_LARGE);
  throw new MemoryRefusedError('history', refused);
}
