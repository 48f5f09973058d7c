/**
 * A client-side deadline that times the dependency, not this process's event loop.
 *
 * A plain `setTimeout` race fails every check that was pending while the loop was held: once the
 * loop turns again, the timers phase runs before the poll phase reads the sockets, so the timer
 * fires first even when the answer has been sitting in the socket for seconds. Here the timer
 * only arms the decision, which is taken in the check phase (`setImmediate`) of the same turn,
 * after the poll phase has read whatever arrived. A dependency that truly did not answer still
 * fails at the deadline (one turn later); one that answered while the loop was busy does not.
 */
export function loopFairDeadline<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(expired());
      });
    }, ms);
    work.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
