/**
 * A benchmark-only relay entry point: the relay exactly as `dist/src/main.js` runs it against
 * DATABASE_URL / READ_DATABASE_URL, except that history reads spill onto the writer instead of
 * being shed (seed 000 off). It is the baseline the storm and history-shed benches compare the
 * relay against; it lives here, not behind an operator's environment variable, so no production
 * configuration can turn seed 000 off. Started by bench-env's startBenchEnv(log, SPILL_RELAY_ENTRY).
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Test } from '@nestjs/testing';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from '../../src/app.module.js';
import { RELAY_APP_OPTIONS, relayHttpAdapter, serveRelay } from '../../src/bootstrap.js';
import { type AppConfig, loadConfig } from '../../src/config/app-config.js';
import { gracefulShutdown } from '../../src/graceful-shutdown.js';
import { HistoryReadPolicy } from '@buzz-relay/read-path/internal';

/** The relay's application with the seed-000 policy replaced: no history-read gate, no shedding. */
async function spillingApp(config: AppConfig): Promise<NestFastifyApplication> {
  const spill: HistoryReadPolicy = { shed: false };
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] }).overrideProvider(HistoryReadPolicy).useValue(spill).compile();
  return moduleRef.createNestApplication<NestFastifyApplication>(relayHttpAdapter(config), RELAY_APP_OPTIONS);
}

async function run(): Promise<void> {
  const config = loadConfig(process.env);
  if (!config.database.url) throw new Error('the spill relay needs DATABASE_URL (the bench starts its own pair)');
  const seedDefaultCommunity = process.env.BUZZ_DEFAULT_COMMUNITY_HOSTS !== undefined; // as main.ts does with DATABASE_URL
  const { app, metricsUrl } = await serveRelay(await spillingApp(config), config, { seedDefaultCommunity });
  const log = (m: string) => process.stdout.write(`buzz-relay (spill baseline): ${m}\n`);
  process.once('SIGTERM', () => void gracefulShutdown(app, config, log).finally(() => process.exit(0)));
  const { port } = app.getHttpServer().address() as AddressInfo;
  process.stdout.write(`buzz-relay metrics on ${metricsUrl}\n`);
  process.stdout.write(`buzz-relay (spill baseline: history reads spill onto the writer) listening on ws://localhost:${port}\n`);
}

run().catch((err: unknown) => {
  process.stderr.write(`spill relay: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
