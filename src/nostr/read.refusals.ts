/**
 * How a read that failed ends (relay.md §2.11–§2.12, seeds 000 and 002): the relay closes the
 * subscription with one of these, and its client library (src/client) tells them apart, so both
 * take them from here.
 */
import { Refusal } from './refusal.js';

export const READ_REFUSALS = {
  /** Terminal: a statement hit its deadline; a one-shot read is not sent again. */
  queryTimedOut: new Refusal('error', 'query timed out'),
  /** Retryable: the database was unavailable, the read was shed, or it failed otherwise. */
  databaseError: new Refusal('error', 'database error'),
} as const;
