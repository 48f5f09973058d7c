/**
 * Builds and starts the relay for a given configuration: Fastify with raw-text
 * bodies (NIP-98 hashes the exact bytes) and request/header/idle timeouts, CORS
 * (BUZZ_CORS_ORIGINS), the ws adapter on the same port, pino logs (the one HTTP exception filter comes
 * with DatabaseModule), migrations
 * before the port opens, and the operator's /metrics listener on its own address.
 */
import type { NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger, PinoLogger } from 'nestjs-pino';
import { AppModule } from './app.module.js';
import { CorsPolicy } from './common/cors-policy.js';
import { installHttpObserver } from './common/http-observer.js';
import { AppConfig } from './config/app-config.js';
import { MetricsListener } from './metrics/metrics-listener.js';
import { ConnectionAdmission } from './subscriptions/connection-admission.service.js';
import { RelayWsAdapter } from './subscriptions/relay-ws.adapter.js';
import { RelayMembershipRepository } from './moderation/relay-membership.repository.js';
import { CommunityRepository } from './tenancy/community.repository.js';
import { TenancyService } from './tenancy/tenancy.service.js';
import { RelayMetrics } from './metrics/relay-metrics.service.js';

export const HTTP_BODY_LIMIT = 1024 * 1024;

/**
 * Node checks the request and header deadlines on a sweep, not per socket; sweeping at a
 * quarter of the shorter deadline (at most once a second) closes a trickling client within
 * about 1.25x its deadline instead of Node's default 30 s sweep.
 */
function sweepIntervalMs(config: AppConfig): number {
  return Math.max(25, Math.min(1000, Math.floor(config.http.headersTimeoutMs / 4)));
}

export interface BootstrapOptions {
  /** Seed a community for config.defaultCommunityHosts (the embedded default does). */
  readonly seedDefaultCommunity: boolean;
}

export interface StartedRelay {
  readonly app: NestFastifyApplication;
  /** `http://host:port/metrics` of the operator listener. */
  readonly metricsUrl: string;
}

/** The options the relay's application is created with: logs buffered until pino is in place, no body parser. */
export const RELAY_APP_OPTIONS: NestApplicationOptions = { bufferLogs: true, bodyParser: false };

export async function bootstrap(config: AppConfig, opts: BootstrapOptions): Promise<StartedRelay> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), relayHttpAdapter(config), RELAY_APP_OPTIONS);
  return serveRelay(app, config, opts);
}

/** Fastify with the relay's body limit and request, header and idle deadlines. */
export function relayHttpAdapter(config: AppConfig): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: HTTP_BODY_LIMIT,
    trustProxy: false,
    // A client that trickles its headers or body is answered 408 and closed at these deadlines.
    // They cover receiving a request only: a WebSocket, once upgraded, is not subject to them
    // (ws clears the socket's idle timeout on upgrade).
    requestTimeout: config.http.requestTimeoutMs,
    connectionTimeout: config.http.idleTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    http: { headersTimeout: config.http.headersTimeoutMs, connectionsCheckingInterval: sweepIntervalMs(config) },
  });
}

/**
 * Starts an application built from `AppModule.forRoot(config)` on `relayHttpAdapter(config)` with
 * RELAY_APP_OPTIONS: logging, body handling, CORS, the ws adapter, the database layer, the metrics
 * listener and the port. `bootstrap` builds it with NestFactory; a benchmark may build it from a
 * testing module (bench/lib/spill-relay.ts).
 */
export async function serveRelay(app: NestFastifyApplication, config: AppConfig, opts: BootstrapOptions): Promise<StartedRelay> {
  app.useLogger(app.get(Logger));
  // NestFactory.create leaves the start-up buffer attached after useLogger: without this flush
  // every `new Logger(…)` line (warnings and errors included) would be kept in memory, unprinted.
  app.flushLogs();
  const fastify = app.getHttpAdapter().getInstance();
  installHttpObserver(fastify, (await app.resolve(PinoLogger)).logger, app.get(RelayMetrics));
  // Every body is kept as the exact text received; controllers parse it themselves.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'string', bodyLimit: HTTP_BODY_LIMIT }, (_req, body, done) => done(null, body));
  const cors = new CorsPolicy(config.corsOrigins);
  app.enableCors(cors.options());
  app.useWebSocketAdapter(
    new RelayWsAdapter(app, app.get(TenancyService), {
      maxFrameBytes: config.limits.maxFrameBytes,
      cors,
      maxPendingUpgrades: config.limits.maxConnections,
      refused: app.get(RelayMetrics).wsUpgradesRefused,
      connections: app.get(ConnectionAdmission),
      maxConnectionsPerIp: config.limits.maxConnectionsPerIp,
    }),
  );
  // Runs the bootstrap hooks: the database layer connects, migrates and starts the fence here.
  await app.init();
  if (opts.seedDefaultCommunity && config.defaultCommunityHosts.length > 0) {
    await app.get(CommunityRepository).ensureCommunity(config.defaultCommunityHosts, 'Local community');
  }
  await bootstrapOwner(app, config);
  warnAboutXPubkey(app.get(Logger), config);
  const metricsUrl = await app.get(MetricsListener).listen(app.get(Logger));
  await app.listen(config.port, config.host);
  // Ready from here (the writer answered during start); /readyz and draining keep it current.
  app.get(RelayMetrics).readinessState.set(1);
  return { app, metricsUrl };
}

/** RELAY_OWNER_PUBKEY holds the owner row of every community, so a closed relay admits its owner. */
async function bootstrapOwner(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  const logger = app.get(Logger);
  for (const warning of config.warnings) logger.warn(warning);
  if (config.relayOwnerPubkey === undefined) return;
  const changed = await app.get(RelayMembershipRepository).ensureOwnerEverywhere(config.relayOwnerPubkey);
  if (changed.length > 0) logger.log(`RELAY_OWNER_PUBKEY made owner of ${changed.length} communit${changed.length === 1 ? 'y' : 'ies'}`);
}

function warnAboutXPubkey(logger: Logger, config: AppConfig): void {
  if (config.xPubkeyTrust === 'always') {
    logger.warn('BUZZ_REQUIRE_AUTH_TOKEN=false: the HTTP bridge trusts the X-Pubkey header from any client that sends no Origin header (never from a browser page; development only)');
  } else if (config.xPubkeyTrust === 'loopback') {
    logger.warn('embedded default: the HTTP bridge trusts the X-Pubkey header from loopback clients that send no Origin header (curl, scripts; never a browser page); BUZZ_REQUIRE_AUTH_TOKEN=true turns it off');
  }
}
