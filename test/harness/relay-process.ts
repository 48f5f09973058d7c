/**
 * Runs the built relay (dist/src/main.js) as a child process against a test
 * database, the way an operator runs it. The public port and the operator's
 * /metrics port are chosen by the OS and read back from the start-up lines.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export interface RelayProcess {
  readonly port: number;
  readonly wsUrl: string;
  readonly httpUrl: string;
  /** `http://127.0.0.1:PORT/metrics`: the operator listener (never the public port). */
  readonly metricsUrl: string;
  readonly child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const ROOT = path.resolve(import.meta.dirname, '../..');
export const RELAY_ENTRY = path.join(ROOT, 'dist/src/main.js');

/** `entry`: another built entry point of the relay (the benches' spill baseline, dist/bench/lib/spill-relay.js). */
export async function startRelay(env: Record<string, string>, timeoutMs = 30_000, entry = RELAY_ENTRY): Promise<RelayProcess> {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first (npm test does)`);
  const child = spawn(process.execPath, ['--enable-source-maps', entry], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', BUZZ_BIND_ADDR: '127.0.0.1:0', BUZZ_METRICS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`relay did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = () => {
      const m = /listening on ws:\/\/[^:]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`relay exited with ${code} before listening:\n${out}`));
    });
  });
  const metricsUrl = /buzz-relay metrics on (http:\/\/[^\s"]+)/.exec(out)?.[1];
  if (!metricsUrl) throw new Error(`relay printed no metrics address:\n${out}`);
  return {
    port,
    wsUrl: `ws://localhost:${port}`,
    httpUrl: `http://localhost:${port}`,
    metricsUrl,
    child,
    output: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', (code) => {
          clearTimeout(kill);
          resolve(code);
        });
        child.kill(signal);
      }),
  };
}
