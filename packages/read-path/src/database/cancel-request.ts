/**
 * Stops a checked-out connection's running statement when the client that asked for it goes
 * away (docs/security.md: a read whose client disconnected stops).
 *
 * Postgres cancels a statement through a CancelRequest on a new socket to the server: the
 * backend's process id and secret key, sixteen bytes, no session and so no connection slot
 * (protocol §53.2.9). The running statement then fails with 57014.
 *
 * The request travels on its own socket and can arrive late, after the statement has ended and
 * the connection has moved on. A connection that had a cancel sent is therefore never reused:
 * the caller destroys it (`release(err)`), and a late request then names a backend that is gone.
 */
import { connect, Socket } from 'node:net';
import type { PoolClient } from 'pg';

/** The parts of pg's Client this needs (documented fields of a connected client). */
interface CancelTarget {
  readonly processID: number | null;
  readonly secretKey: number | null;
  readonly host: string;
  readonly port: number;
}

const CANCEL_REQUEST_CODE = 80877102;

/** Sends one CancelRequest for `client`'s backend. Never throws; a failure is only logged by the caller's statement finishing. */
export function sendCancelRequest(client: PoolClient): void {
  const target = client as unknown as CancelTarget;
  if (target.processID === null || target.secretKey === null) return;
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  packet.writeInt32BE(target.processID, 8);
  packet.writeInt32BE(target.secretKey, 12);
  const socket: Socket = target.host.startsWith('/')
    ? connect(`${target.host}/.s.PGSQL.${target.port}`)
    : connect(target.port, target.host);
  socket.setTimeout(5000, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.once('connect', () => socket.end(packet));
}

/**
 * While `signal` is not aborted nothing happens; once it is, the connection's statement is
 * cancelled (at most once). `dispose()` stops listening and says whether a cancel was sent, in
 * which case the caller must destroy the connection rather than return it to the pool.
 */
export function cancelOnAbort(client: PoolClient, signal: AbortSignal | undefined): { dispose(): boolean } {
  if (signal === undefined) return { dispose: () => false };
  let sent = false;
  const onAbort = () => {
    if (sent) return;
    sent = true;
    sendCancelRequest(client);
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    dispose: () => {
      signal.removeEventListener('abort', onAbort);
      return sent;
    },
  };
}
