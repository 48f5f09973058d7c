/**
 * Who is keeping a connection's socket unread. Two budgets may stop reading a connection at once
 * (its own input rate, InputPacing; its address's budget before AUTH, PreAuthInput); the socket is
 * read again only when neither holds it, so one budget's recovery never lifts the other's pause.
 * Graceful shutdown pauses and resumes every socket itself and is not counted here.
 */
import type { RelayConnection } from './relay-connection.js';

export type InputHold = 'pacing' | 'preauth';

const holds = new WeakMap<RelayConnection, Set<InputHold>>();

/** Stops reading `conn` on behalf of `by` (nothing more if `by` already holds it). */
export function holdInput(conn: RelayConnection, by: InputHold): void {
  let set = holds.get(conn);
  if (set === undefined) holds.set(conn, (set = new Set()));
  if (set.size === 0) conn.ws.pause();
  set.add(by);
}

/** `by` no longer holds `conn`; the socket is read again when nothing else holds it. */
export function releaseInput(conn: RelayConnection, by: InputHold): void {
  const set = holds.get(conn);
  if (set === undefined || !set.delete(by)) return;
  if (set.size === 0 && !conn.isCancelled) conn.ws.resume();
}

/** Whether `by` is holding `conn` unread. */
export function isHeld(conn: RelayConnection, by: InputHold): boolean {
  return holds.get(conn)?.has(by) ?? false;
}
