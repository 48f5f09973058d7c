/**
 * The statement deadline of client-driven reads on the writer (docs/security.md).
 *
 * The writer pool's sessions keep the operator's `statement_timeout` (BUZZ_DB_STATEMENT_TIMEOUT_MS,
 * off by default), because writes, migrations and maintenance share them. A read that a client's
 * filter drives gets a deadline of its own: RoutedReader arms the connection it checked out, and the
 * connection switches its session's `statement_timeout` right before its next statement, by a
 * `set_config` queued ahead of it (pg sends queued queries in order: no extra wait for the caller),
 * and back before the first statement of whoever uses the connection next unarmed. A run of reads
 * on one connection, or of writes, costs no switch at all.
 *
 * Switches happen only outside a transaction block: inside one, a rollback would undo the change
 * and leave the state below wrong. A read that opens its own block (withStatementDeadline) has
 * its first statement sent outside it, so the switch goes first. A failed switch leaves the state
 * unknown, and the next statement switches again.
 */

const STATE = Symbol('buzz.readDeadline');

interface DeadlineState {
  /** The session's own statement_timeout, set after connect (0 = off). */
  sessionMs: number;
  /** What the session is known to have now. */
  currentMs: number | 'unknown';
  /** What the holder of the connection wants; undefined = the session's own. */
  wantedMs: number | undefined;
}

interface Carrier {
  [STATE]?: DeadlineState;
}

function state(client: object): DeadlineState {
  const carrier = client as Carrier;
  carrier[STATE] ??= { sessionMs: 0, currentMs: 0, wantedMs: undefined };
  return carrier[STATE];
}

/** Records the statement_timeout the after-connect hook gave the session. */
export function noteSessionStatementTimeout(client: object, ms: number): void {
  const s = state(client);
  s.sessionMs = ms;
  s.currentMs = ms;
}

/** The deadline a client read runs under: `readMs`, or the session's own when that is tighter. */
export function clientReadDeadline(sessionMs: number, readMs: number): number {
  return sessionMs > 0 ? Math.min(sessionMs, readMs) : readMs;
}

/** Gives the connection's next statements (until disarmed) the client-read deadline. */
export function armReadDeadline(client: object, readMs: number): void {
  const s = state(client);
  s.wantedMs = clientReadDeadline(s.sessionMs, readMs);
}

/** Back to the session's own deadline, from the next statement of the connection's next holder. */
export function disarmReadDeadline(client: object): void {
  state(client).wantedMs = undefined;
}

/**
 * Called by the connection before it sends a statement: queues the switch through `send` when the
 * session's deadline differs from the one wanted and no transaction block is open.
 */
export function syncReadDeadline(client: object, idle: boolean, send: (statement: string) => Promise<unknown>): void {
  const carrier = client as Carrier;
  const s = carrier[STATE];
  if (s === undefined || !idle) return;
  const wanted = s.wantedMs ?? s.sessionMs;
  if (s.currentMs === wanted) return;
  s.currentMs = wanted;
  send(`select set_config('statement_timeout', '${wanted}', false)`).catch(() => {
    s.currentMs = 'unknown';
  });
}
