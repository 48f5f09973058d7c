import { createServer, connect, type Server, type Socket } from 'node:net';
import { loopFairDeadline } from './loop-fair-deadline.js';

/** Holds the event loop (run-to-completion) for `ms`, as a long synchronous task does. */
function holdLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

/** An echo server; `echoed` resolves once it has written an answer (which then waits in the client's socket). */
let server: Server;
let port: number;
let echoed: () => void = () => undefined;
beforeAll(async () => {
  server = createServer((s) =>
    s.on('data', (d) => {
      s.write(d);
      echoed();
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function connected(): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

/** One round trip whose answer is in the socket, unread, while the loop is held past the deadline. */
async function answeredDuringHold(deadline: <T>(work: Promise<T>, ms: number, expired: () => Error) => Promise<T>): Promise<string> {
  const client = await connected();
  try {
    const answer = new Promise<string>((resolve) => client.once('data', (d) => resolve(d.toString())));
    const guarded = deadline(answer, 50, () => new Error('late'));
    const written = new Promise<void>((resolve) => (echoed = resolve));
    client.write('ping');
    // The echo server shares this loop: once it has answered, hold the loop past the deadline.
    await written;
    holdLoop(200);
    return await guarded.catch((err: Error) => err.message);
  } finally {
    client.destroy();
  }
}

describe('loopFairDeadline', () => {
  it('does not fail a check whose answer arrived while the event loop was held past the deadline', async () => {
    expect(await answeredDuringHold(loopFairDeadline)).toBe('ping');
  });

  it('fails a check that was not answered by the deadline', async () => {
    const never = new Promise<string>(() => undefined);
    await expect(loopFairDeadline(never, 20, () => new Error('late'))).rejects.toThrow('late');
  });

  it('passes the work’s own failure through', async () => {
    await expect(loopFairDeadline(Promise.reject(new Error('refused')), 1000, () => new Error('late'))).rejects.toThrow('refused');
  });
});
