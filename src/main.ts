/**
 * `npm start`: with DATABASE_URL the relay uses the given writer (and
 * READ_DATABASE_URL reader) and starts nothing else; without it, it starts and
 * keeps its own Postgres writer and streaming replica under .data/.
 */
import 'reflect-metadata';
import { pino, type Logger } from 'pino';
import { AppConfig, ConfigError, loadConfig } from './config/app-config.js';
import { bootstrap } from './bootstrap.js';
import { gracefulShutdown } from './graceful-shutdown.js';
import { startEmbeddedDatabase } from './database/embedded/embedded-database.js';
import { keptRelayKey, recordRunning, stateDirOf } from './database/embedded/embedded-state.js';
import { startBanner } from './start-banner.js';

/**
 * The process's own lines (embedded Postgres, the listening addresses, shutdown, a failed start)
 * are pino JSON on stdout like the application's, so every stdout line is one JSON object. They
 * are printed at any LOG_LEVEL, as before they were JSON: the start-up lines name the addresses.
 */
function processLogger(logLevel = 'info'): Logger {
  return pino({ level: logLevel === 'debug' || logLevel === 'trace' ? logLevel : 'info', name: 'buzz-relay' });
}

async function main(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      processLogger().fatal(`buzz-relay: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
  const log = processLogger(config.logLevel);
  processLog = log;
  // Before anything else starts, so the first spans (the floor-guard checks) are exported.
  const tracing = config.tracing.enabled ? (await import('./tracing/tracing.js')).startTracing(config.tracing) : undefined;
  const pgLog = log.child({ component: 'embedded-postgres' });
  const embedded = config.database.url ? undefined : await startEmbeddedDatabase({ log: (m) => pgLog.info(m) });
  let forget: (() => void) | undefined;
  if (embedded) {
    config = { ...config, database: { ...config.database, url: embedded.writerUrl, readUrl: embedded.readerUrl } };
    // The zero-config relay keeps one key across restarts (state it signed stays its own), and
    // tells `npm run admin` where its database is.
    if (config.relayPrivateKey === undefined) {
      const key = keptRelayKey(stateDirOf(embedded.dataDir));
      config = { ...config, relayPrivateKey: key.hex };
      log.info({ file: key.file }, key.made ? `relay key made and kept in ${key.file}` : `relay key read from ${key.file}`);
    }
    forget = recordRunning(stateDirOf(embedded.dataDir), embedded);
  }
  const { app, metricsUrl } = await bootstrap(config, { seedDefaultCommunity: embedded !== undefined || process.env.BUZZ_DEFAULT_COMMUNITY_HOSTS !== undefined });
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, `${signal}, shutting down`);
    let code = 0;
    try {
      await gracefulShutdown(app, config, (m) => log.info(m));
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      code = 1;
    }
    forget?.();
    await embedded?.stop();
    await tracing?.shutdown().catch((err: unknown) => log.error({ err }, 'flushing spans failed'));
    process.exit(code);
  };
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));
  const url = (await app.getUrl()).replace('http://', 'ws://').replace('[::1]', 'localhost').replace('127.0.0.1', 'localhost');
  log.info({ url: metricsUrl }, `buzz-relay metrics on ${metricsUrl}`);
  log.info({ url }, `buzz-relay listening on ${url}`);
  // A person at a terminal gets one plain block; piped output stays JSON lines only.
  if (process.stdout.isTTY) {
    const { url: writerUrl, readUrl } = config.database;
    process.stdout.write(startBanner({ wsUrl: url, metricsUrl, writerUrl: writerUrl!, readerUrl: readUrl, embeddedDir: embedded?.dataDir }));
  }
}

let processLog: Logger | undefined;

main().catch((err: unknown) => {
  (processLog ?? processLogger()).fatal({ err }, 'failed to start');
  process.exit(1);
});
