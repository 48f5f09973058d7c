/**
 * reports-service on a real Postgres writer and its streaming replica, tested the way its team
 * would: the app started on a free port and spoken to over HTTP. REPORTS_WRITER_URL and
 * REPORTS_READER_URL name the pair, as a role that may pause the replica's replay
 * (`pg_wal_replay_pause()`: a superuser, or granted). Paused replay makes the two servers hold
 * different rows, so each answer shows which one served it; the writer is cut off through a TCP
 * pass-through this file controls.
 *
 *     REPORTS_WRITER_URL=postgres://… REPORTS_READER_URL=postgres://… npm run test:e2e
 */
import 'reflect-metadata';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { RoutedReader } from '@buzz-relay/read-path';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppModule } from '../src/app.module.js';

const WRITER_URL = required('REPORTS_WRITER_URL');
const READER_URL = required('REPORTS_READER_URL');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: these tests need a Postgres writer and its streaming replica`);
  return value;
}

interface Running {
  readonly app: NestFastifyApplication;
  readonly base: string;
}

interface Answer {
  readonly status: number;
  readonly body: { readonly servedBy?: string } & Record<string, unknown>;
  readonly retryAfter: string | null;
}

const apps: Running[] = [];
const passThroughs: TcpPassThrough[] = [];
let writer: pg.Pool;
let replica: pg.Pool;

/** Starts the app with the pair and `env` on top (AppModule reads the environment at creation). */
async function start(env: Record<string, string>): Promise<Running> {
  Object.assign(process.env, { REPORTS_WRITER_URL: WRITER_URL, REPORTS_READER_URL: READER_URL }, env);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const running = { app, base: await app.getUrl() };
  apps.push(running);
  return running;
}

async function get(running: Running, path: string): Promise<Answer> {
  const res = await fetch(`${running.base}${path}`);
  return { status: res.status, body: (await res.json()) as Answer['body'], retryAfter: res.headers.get('retry-after') };
}

async function eventually<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A report on the writer, and on the replica once replayed. */
async function seed(id: number, title: string): Promise<void> {
  await writer.query('insert into reports values ($1, $2) on conflict (id) do update set title = excluded.title', [id, title]);
  const onReplica = async () => (await replica.query<{ title: string }>('select title from reports where id = $1', [id])).rows[0]?.title;
  await eventually(`report ${id} to reach the replica`, onReplica, (t) => t === title);
}

async function withReplayPaused(work: () => Promise<void>): Promise<void> {
  await replica.query('select pg_wal_replay_pause()');
  try {
    await work();
  } finally {
    await replica.query('select pg_wal_replay_resume()');
  }
}

/** A TCP pass-through to the writer that the test can cut, as a network partition would. */
class TcpPassThrough {
  private server: Server | undefined;
  private port = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly target: URL) {}

  static async to(url: string): Promise<TcpPassThrough> {
    const passThrough = new TcpPassThrough(new URL(url));
    await passThrough.open();
    passThroughs.push(passThrough);
    return passThrough;
  }

  /** The writer's URL, through this pass-through. */
  get url(): string {
    const url = new URL(this.target);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** Accepts connections (again, on the same port after a cut). */
  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 5432), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Drops every connection and refuses new ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

beforeAll(async () => {
  writer = new pg.Pool({ connectionString: WRITER_URL, max: 2 });
  replica = new pg.Pool({ connectionString: READER_URL, max: 2 });
  await writer.query('create table if not exists reports (id int primary key, title text not null)');
});

afterAll(async () => {
  for (const { app } of apps) await app.close();
  for (const passThrough of passThroughs) await passThrough.cut();
  await replica?.query('select pg_wal_replay_resume()');
  await replica?.end();
  await writer?.end();
});

describe('routed and writer-pinned reads', () => {
  let wide: Running;

  beforeAll(async () => {
    // One reader connection, so one history permit; a wide budget, so the replica keeps
    // answering (proved, and stale by design) while its replay is paused.
    wide = await start({ REPORTS_READ_POOL_SIZE: '1', REPORTS_READ_MAX_AGE_MS: '20000' });
    await wide.app.get(RoutedReader).whenReplicaServing(30_000);
  });

  it('a routed read is served by the proved replica, a writer-pinned read by the writer', async () => {
    await seed(101, 'Q3 draft');
    await withReplayPaused(async () => {
      await writer.query(`update reports set title = 'Q3 final' where id = 101`);
      expect(await get(wide, '/reports/101')).toEqual({ status: 200, body: { id: 101, title: 'Q3 draft', servedBy: 'replica' }, retryAfter: null });
      expect(await get(wide, '/reports/101/current')).toEqual({ status: 200, body: { id: 101, title: 'Q3 final', servedBy: 'writer' }, retryAfter: null });
    });
  });

  it('with the one reader busy, a routed read is shed: 503 with Retry-After', async () => {
    await seed(102, 'Q4');
    const slow = get(wide, '/reports/102?delayMs=600000');
    const sleeping = async () =>
      (await replica.query<{ pid: number }>(`select pid from pg_stat_activity where query like '%pg_sleep%' and pid <> pg_backend_pid()`)).rows;
    await eventually('the slow report to hold the reader', sleeping, (rows) => rows.length === 1);
    expect(await get(wide, '/reports/102')).toEqual({ status: 503, body: { error: 'database unavailable' }, retryAfter: '1' });
    const [{ pid }] = await sleeping();
    await replica.query('select pg_cancel_backend($1)', [pid]);
    expect(await slow).toEqual({ status: 503, body: { error: 'query timed out' }, retryAfter: null });
  });
});

describe('a replica behind the staleness budget', () => {
  it('is not read: a routed read is served by the writer, with the current row', async () => {
    const tight = await start({ REPORTS_READ_POOL_SIZE: '2', REPORTS_READ_MAX_AGE_MS: '2000' });
    const routed = tight.app.get(RoutedReader);
    await routed.whenReplicaServing(30_000);
    await seed(103, 'v1');
    await withReplayPaused(async () => {
      await writer.query(`update reports set title = 'v2' where id = 103`);
      const read = await eventually('a routed read to leave the stale replica', () => get(tight, '/reports/103'), (a) => a.body.servedBy !== 'replica');
      expect(read).toEqual({ status: 200, body: { id: 103, title: 'v2', servedBy: 'writer' }, retryAfter: null });
      expect(await routed.replicaServing()).toMatchObject({ serving: false, reason: expect.stringMatching(/over readMaxAgeMs 2000/) });
    });
  });
});

describe('a writer cut off', () => {
  it('answers writer-pinned reads 503 with Retry-After, and serves them again once it is back', async () => {
    const passThrough = await TcpPassThrough.to(WRITER_URL);
    const app = await start({ REPORTS_WRITER_URL: passThrough.url, REPORTS_READ_POOL_SIZE: '2', REPORTS_READ_MAX_AGE_MS: '2000' });
    await seed(104, 'kept');
    expect((await get(app, '/reports/104/current')).status).toBe(200);
    await passThrough.cut();
    expect(await get(app, '/reports/104/current')).toEqual({ status: 503, body: { error: 'database unavailable' }, retryAfter: '1' });
    await passThrough.open();
    const back = await eventually('the writer to serve again', () => get(app, '/reports/104/current'), (a) => a.status !== 503);
    expect(back).toEqual({ status: 200, body: { id: 104, title: 'kept', servedBy: 'writer' }, retryAfter: null });
  });
});
