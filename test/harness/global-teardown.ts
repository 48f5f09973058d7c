/** Jest globalTeardown of the `integration` project: stops what global-setup.ts started. */
import type { PgTestServers } from './global-setup.js';

const HANDLE_KEY = Symbol.for('buzz-relay.test.pg-servers');

export default async function globalTeardown(): Promise<void> {
  const registry = globalThis as Record<symbol, unknown>;
  const servers = registry[HANDLE_KEY] as PgTestServers | undefined;
  delete registry[HANDLE_KEY];
  await servers?.stop();
}
