/**
 * A private `redis-server` for a test file: a free loopback port, no persistence
 * (`--save "" --appendonly no`), its own temporary working directory. Fault
 * helpers kill it (SIGKILL, like a crashed node) and start it again on the same
 * port, so clients must reconnect to the same URL.
 *
 *   const redis = await startRedisServer();
 *   afterAll(() => redis.stop());
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: connections drop at once, nothing is flushed (there is nothing to flush). */
  kill(): Promise<void>;
  /** Starts again on the same port after kill(); resolves once it answers PING. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;

/** The binary: BUZZ_TEST_REDIS_SERVER, else `redis-server` on PATH. */
export function redisServerBinary(): string | undefined {
  const configured = process.env.BUZZ_TEST_REDIS_SERVER;
  if (configured) return configured;
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

export async function startRedisServer(): Promise<RedisServer> {
  const binary = redisServerBinary();
  if (!binary) throw new Error('redis-server is not installed (apt-get install redis-server, or set BUZZ_TEST_REDIS_SERVER)');
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'buzz-redis-'));
  let child = await launch(binary, port, dir);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: async () => {
      await terminate(child, 'SIGKILL');
    },
    restart: async () => {
      await terminate(child, 'SIGKILL');
      child = await launch(binary, port, dir);
    },
    stop: async () => {
      await terminate(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function launch(binary: string, port: number, dir: string): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no', '--loglevel', 'warning'];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}:\n${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not answer PING on ${port} within ${START_TIMEOUT_MS} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

/** Signals the server and waits for it to exit: SIGKILL after 5 s, and never waits more than 10 s. */
function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS / 2);
    const giveUp = setTimeout(done, STOP_TIMEOUT_MS);
    function done() {
      clearTimeout(escalate);
      clearTimeout(giveUp);
      resolve();
    }
    child.once('exit', done);
    child.kill(signal);
  });
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.once('connect', () => socket.write('PING\r\n'));
  });
}

/** A port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
