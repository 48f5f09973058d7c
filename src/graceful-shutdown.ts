/**
 * SIGTERM / SIGINT: leave without losing anything a client was told is stored.
 *
 * 1. Readiness turns `shutting_down` and the listener closes: no new HTTP
 *    requests or WebSocket upgrades.
 * 2. Every open socket stops being read, so no new EVENT/REQ/COUNT starts, while
 *    the ones already running finish and send their `OK`/`EOSE` (bounded by
 *    BUZZ_SHUTDOWN_DRAIN_MS).
 * 3. Every socket gets a close frame `1012 "relay restarting"` (relay.md §2.2).
 * 4. app.close(): the event writer flushes its queue (an `OK true` always follows
 *    its COMMIT, so an acknowledged event is stored however far this gets),
 *    in-flight HTTP requests complete, then the Postgres pools and Redis close.
 */
import { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import type { AppConfig } from './config/app-config.js';
import { HandlerGate } from './subscriptions/handler-gate.js';
import { LiveFanout } from './subscriptions/live-fanout.service.js';
import { RelayGateway } from './subscriptions/relay.gateway.js';
import { RelayMetrics } from './metrics/relay-metrics.service.js';
import { LifecycleState } from './health/lifecycle-state.js';

const POLL_MS = 20;
const CLOSE_HANDSHAKE_MS = 1000;

export async function gracefulShutdown(app: INestApplication, config: AppConfig, log: (message: string) => void): Promise<void> {
  const started = Date.now();
  app.get(LifecycleState).startDraining();
  app.get(RelayMetrics, { strict: false }).readinessState.set(0);
  (app.getHttpServer() as Server).close();
  const fanout = app.get(LiveFanout, { strict: false });
  const gate = app.get(HandlerGate, { strict: false });
  for (const conn of fanout.connections()) conn.ws.pause();
  // Idle on two polls in a row: a frame read just before the pause may still be between its quota check and the gate.
  const drained = await waitFor(() => gate.inFlight === 0, config.scaleOut.shutdownDrainMs, 2);
  if (!drained) log(`shutdown: ${gate.inFlight} handler(s) still running after ${config.scaleOut.shutdownDrainMs} ms; closing anyway`);
  for (const conn of fanout.connections()) conn.ws.resume();
  app.get(RelayGateway, { strict: false }).closeAll(1012, 'relay restarting');
  await waitFor(() => fanout.connections().next().done === true, CLOSE_HANDSHAKE_MS, 1);
  await app.close();
  log(`shutdown: done in ${Date.now() - started} ms`);
}

/** Polls until cond has held on `times` consecutive polls, or the deadline passes; true when it held. */
async function waitFor(cond: () => boolean, timeoutMs: number, times: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let held = 0;
  for (;;) {
    held = cond() ? held + 1 : 0;
    if (held >= times) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
