/**
 * Entry point of `npm run admin` (see admin-commands.ts). Exit status: 0 done, 1 refused or
 * failed, 2 bad input.
 */
import { AppConfig, ConfigError, loadConfig } from '../config/app-config.js';
import type { RedisService } from '../redis/redis.service.js';
import { embeddedStateDirs } from '../database/embedded/embedded-database.js';
import { readKeptRelayKey, runningEmbedded } from '../database/embedded/embedded-state.js';
import { parseCommand, USAGE, UsageError, wantsHelp } from './admin-args.js';

async function main(argv: readonly string[]): Promise<number> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config: AppConfig;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) return fail(2, err.message);
    throw err;
  }
  if (config.database.url === undefined) {
    const found = withEmbeddedDatabase(config);
    if (found === undefined) {
      return fail(2, 'DATABASE_URL is not set and no relay started by `npm start` (without DATABASE_URL) is running in this checkout: start one with `npm start`, or set DATABASE_URL to the writer your relay uses');
    }
    config = found;
  }
  let cmd;
  try {
    cmd = parseCommand(argv, config);
  } catch (err) {
    if (err instanceof UsageError) return fail(2, `${err.message}\n${USAGE}`);
    throw err;
  }
  // Said before anything is read or written: a command without --host acts on the default host.
  if (cmd.defaultHost) process.stderr.write(`admin: acting on host ${cmd.host} (the first of BUZZ_DEFAULT_COMMUNITY_HOSTS; --host <host> to choose)\n`);
  if (config.relayPrivateKey === undefined && (cmd.command === 'add-member' || cmd.command === 'remove-member')) {
    process.stderr.write('admin: warning: BUZZ_RELAY_PRIVATE_KEY is not set: the NIP-43 events this writes (8000/8001, 13534) are signed by a one-off key; set the relay\'s key\n');
  }
  // The relay's services load only now: bad input above is answered without them.
  await import('reflect-metadata');
  const [{ NestFactory }, { Rejection }, { RedisService }, { RevocationBridge }, { AdminCliModule }, { runCommand }] = await Promise.all([
    import('@nestjs/core'),
    import('../nostr/refusal.js'),
    import('../redis/redis.service.js'),
    import('../scale-out/revocation-bridge.service.js'),
    import('./admin-cli.module.js'),
    import('./admin-commands.js'),
  ]);
  // The application context starts the database layer (DatabaseService.onApplicationBootstrap).
  const app = await NestFactory.createApplicationContext(AdminCliModule.forRoot(config), { logger: ['error', 'warn'] });
  try {
    await redisReady(app.get(RedisService));
    const lines = await runCommand(app, cmd, config);
    // Revocations and bans reach running pods over Redis: wait for the publishes (they are queued after the commit).
    await new Promise((resolve) => setImmediate(resolve));
    await app.get(RevocationBridge).flush();
    for (const line of lines) process.stdout.write(`${line}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) return fail(2, err.message);
    if (err instanceof Rejection) return fail(1, `refused: ${err.message}`);
    return fail(1, `failed: ${(err as Error).message}`);
  } finally {
    await app.close();
  }
}

/** With BUZZ_REDIS_URL, waits (up to 5 s) for the connection the revocation publishes need. */
async function redisReady(redis: RedisService): Promise<void> {
  const deadline = Date.now() + 5000;
  while (redis.enabled && !redis.commandReady && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (redis.enabled && !redis.commandReady) process.stderr.write('admin: warning: Redis is not reachable; running pods enforce bans at their next sweep\n');
}

/**
 * The configuration of the relay `npm start` runs on its embedded pair in this checkout (its
 * database URLs and the relay key it keeps), or undefined when none is running.
 */
function withEmbeddedDatabase(config: AppConfig): AppConfig | undefined {
  const running = runningEmbedded(embeddedStateDirs());
  if (running === undefined) return undefined;
  process.stderr.write(`admin: using the database of the relay running on ${running.stateDir} (writer ${running.writerUrl})\n`);
  const relayPrivateKey = config.relayPrivateKey ?? readKeptRelayKey(running.stateDir);
  return { ...config, relayPrivateKey, database: { ...config.database, url: running.writerUrl, readUrl: running.readerUrl } };
}

function fail(code: number, message: string): number {
  process.stderr.write(`admin: ${message}\n`);
  return code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`admin: failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
