/**
 * The storm bench's clients, in a process of their own (lib/storm-clients.ts starts it, under
 * `nice` when asked). Messages from the parent: `prepare` (keys and options: the signers do their
 * curve work here, before anything is timed), `go` (the storm; answers with every client's
 * outcome and the storm's start and end on the absolute clock `timeOrigin + now`), `close` (closes
 * the sockets and exits).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { preparedSigner } from './fast-sign.js';
import { startStormClient, type StormClient } from './storm-client.js';
import type { StormClientsMessage, StormClientsOptions, StormClientsReply } from './storm-clients.js';

const send = (m: StormClientsReply) => process.send!(m);
const now = () => performance.timeOrigin + performance.now();
let options: StormClientsOptions | undefined;
let signers: ReturnType<typeof preparedSigner>[] = [];
let clients: StormClient[] = [];

async function storm(o: StormClientsOptions): Promise<void> {
  let session: Session | undefined;
  if (o.cpuProfileDir) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu0 = process.cpuUsage();
  const startedAtAbs = now();
  clients = signers.map((signer) =>
    startStormClient({ relayUrl: o.relayUrl, signer, auth: o.auth, filter: o.filter, maxRetries: o.maxRetries, backoffBaseMs: o.backoffBaseMs, deadlineMs: o.deadlineMs }),
  );
  const outcomes = await Promise.all(clients.map((c) => c.outcome));
  const endedAtAbs = now();
  const cpu = process.cpuUsage(cpu0);
  let cpuProfile: string | undefined;
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    cpuProfile = path.join(o.cpuProfileDir!, `storm-clients-${process.pid}.cpuprofile`);
    writeFileSync(cpuProfile, JSON.stringify(profile));
    session.disconnect();
  }
  send({ type: 'outcomes', outcomes, startedAtAbs, endedAtAbs, cpuSeconds: (cpu.user + cpu.system) / 1e6, cpuProfile });
}

process.on('message', (m: StormClientsMessage) => {
  if (m.type === 'prepare') {
    options = m.options;
    signers = Array.from({ length: m.options.clients }, () => preparedSigner(randomBytes(32)));
    send({ type: 'ready' });
  } else if (m.type === 'go') {
    storm(options!).catch((err: Error) => send({ type: 'error', message: err.stack ?? err.message }));
  } else if (m.type === 'close') {
    for (const c of clients) c.close();
    setTimeout(() => process.exit(0), 100);
  }
});
