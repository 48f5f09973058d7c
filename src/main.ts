/**
 * `npm start`: with DATABASE_URL the relay uses the given writer (and
 * READ_DATABASE_URL reader) and starts nothing else; without it, it starts and
 * keeps its own Postgres writer and streaming replica under .data/.
 */
import 'reflect-metadata';
import { AppConfig, ConfigError, loadConfig } from './config/app-config.js';
import { bootstrap } from './bootstrap.js';
import { gracefulShutdown } from './health/graceful-shutdown.js';
import { startEmbeddedDatabase } from './database/embedded/embedded-database.js';

async function main(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`buzz-relay: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  // Before anything else starts, so the first spans (the floor-guard checks) are exported.
  const tracing = config.tracing.enabled ? (await import('./tracing/tracing.js')).startTracing(config.tracing) : undefined;
  const embedded = config.database.url ? undefined : await startEmbeddedDatabase({ log: (m) => process.stdout.write(`[embedded-postgres] ${m}\n`) });
  if (embedded) config = { ...config, database: { ...config.database, url: embedded.writerUrl, readUrl: embedded.readerUrl } };
  const { app, metricsUrl } = await bootstrap(config, { seedDefaultCommunity: embedded !== undefined || process.env.BUZZ_DEFAULT_COMMUNITY_HOSTS !== undefined });
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`buzz-relay: ${signal}, shutting down\n`);
    let code = 0;
    try {
      await gracefulShutdown(app, config, (m) => process.stdout.write(`buzz-relay: ${m}\n`));
    } catch (err) {
      process.stderr.write(`buzz-relay: shutdown failed: ${(err as Error)?.stack ?? String(err)}\n`);
      code = 1;
    }
    await embedded?.stop();
    await tracing?.shutdown().catch((err: unknown) => process.stderr.write(`buzz-relay: flushing spans failed: ${String(err)}\n`));
    process.exit(code);
  };
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));
  const url = await app.getUrl();
  process.stdout.write(`buzz-relay metrics on ${metricsUrl}\n`);
  process.stdout.write(`buzz-relay listening on ${url.replace('http://', 'ws://').replace('[::1]', 'localhost').replace('127.0.0.1', 'localhost')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`buzz-relay: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
