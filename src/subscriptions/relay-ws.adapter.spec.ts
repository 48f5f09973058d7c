import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { loadConfig } from '../config/app-config.js';
import { CorsPolicy, ORIGIN_NOT_ALLOWED } from '../common/cors-policy.js';
import type { TenancyService } from '../tenancy/tenancy.service.js';
import { TENANT_LOOKUP_FAILED_MESSAGE, UNKNOWN_HOST_MESSAGE } from '../tenancy/tenancy.service.js';
import { ConnectionAdmission } from './connection-admission.service.js';
import { OutputTurns } from './output-turns.js';
import { RELAY_FULL_MESSAGE, RelayWsAdapter, tenantOf, ticketOf, UpgradeRefusal, UPGRADES_BUSY_MESSAGE } from './relay-ws.adapter.js';

/** Resolves `chat.example` to a live community, `down.example` to a failed lookup and every other host to `unknown_host`, without a database. */
const tenancy = {
  resolve: async (host: string | undefined) =>
    host === 'chat.example'
      ? { ok: true as const, community: { id: 'c1', archived: false }, host }
      : { ok: false as const, reason: host === 'down.example' ? ('lookup_failed' as const) : ('unknown_host' as const) },
} as unknown as TenancyService;

type Answer = [boolean, number?, string?, Record<string, string>?];

function upgrade(
  host = 'chat.example',
  origin?: string,
  peer = '198.51.100.1',
): { req: IncomingMessage; answers: Answer[]; done: (ok: boolean, code?: number, message?: string, headers?: Record<string, string>) => void } {
  const socket = Object.assign(new EventEmitter(), { remoteAddress: peer, destroyed: false });
  const rawHeaders = [...(host === undefined ? [] : ['Host', host]), ...(origin === undefined ? [] : ['Origin', origin])];
  const req = { headers: { host, origin }, rawHeaders, socket } as unknown as IncomingMessage;
  const answers: Answer[] = [];
  return {
    req,
    answers,
    done: (ok, code, message, headers) => void answers.push(code === undefined ? [ok] : headers?.['Retry-After'] ? [ok, code, message, headers] : [ok, code, message]),
  };
}

/** A clock that moves only when an upgrade says it worked: turns are decided by it, not by the machine. */
function fakeClock(): { now: () => number; work: (ms: number) => void } {
  let t = 0;
  return { now: () => t, work: (ms) => void (t += ms) };
}

/** Refusals counted by reason, as buzz_ws_upgrades_refused_total would count them. */
let refusals: UpgradeRefusal[];
beforeEach(() => (refusals = []));

function adapter(maxPendingUpgrades = 100, upgradeTurns = new OutputTurns(), connections?: ConnectionAdmission): RelayWsAdapter {
  const refused = { inc: ({ reason }: { reason: UpgradeRefusal }) => void refusals.push(reason) };
  const cors = new CorsPolicy(['https://chat.example']);
  return new RelayWsAdapter(undefined as never, tenancy, { maxFrameBytes: 1024, cors, maxPendingUpgrades, upgradeTurns, refused, connections, maxConnectionsPerIp: 2 });
}

describe('RelayWsAdapter upgrade admission', () => {
  it('completes an admitted upgrade in a later turn, with its tenant bound', async () => {
    const a = adapter();
    const u = upgrade();
    const admitted = a.admitUpgrade(u.req, u.done);
    await Promise.resolve();
    await Promise.resolve();
    expect(u.answers).toEqual([]);
    expect(a.pendingUpgrades).toBe(1);
    await admitted;
    expect(u.answers).toEqual([[true]]);
    expect(tenantOf(u.req)).toEqual({ community: { id: 'c1', archived: false }, host: 'chat.example' });
    expect(a.pendingUpgrades).toBe(0);
    expect(refusals).toEqual([]);
  });

  it('completes a burst of upgrades a few per turn, each once and in order, reading other work between turns', async () => {
    const clock = fakeClock();
    const a = adapter(1000, new OutputTurns(5, clock.now));
    const order: string[] = [];
    const burst = Array.from({ length: 12 }, (_, i) => {
      const u = upgrade();
      return a.admitUpgrade(u.req, () => {
        order.push(`u${i}`);
        // A socket read that became ready while the first upgrade completed.
        if (i === 0) setImmediate(() => order.push('read'));
        clock.work(2);
      });
    });
    await Promise.all(burst);
    // 2 ms per upgrade, 5 ms per turn: three upgrades, then the read, then the rest.
    expect(order).toEqual(['u0', 'u1', 'u2', 'read', ...Array.from({ length: 9 }, (_, i) => `u${i + 3}`)]);
  });

  it('answers 503 once maxPendingUpgrades are waiting, and completes the ones it admitted', async () => {
    const a = adapter(2);
    const admitted = [upgrade(), upgrade()];
    const busy = upgrade();
    const waits = admitted.map((u) => a.admitUpgrade(u.req, u.done));
    await a.admitUpgrade(busy.req, busy.done);
    expect(busy.answers).toEqual([[false, 503, UPGRADES_BUSY_MESSAGE]]);
    expect(refusals).toEqual(['busy']);
    expect(tenantOf(busy.req)).toBeUndefined();
    await Promise.all(waits);
    expect(admitted.map((u) => u.answers)).toEqual([[[true]], [[true]]]);
    // Room again once the queue drained.
    const next = upgrade();
    await a.admitUpgrade(next.req, next.done);
    expect(next.answers).toEqual([[true]]);
  });

  it('refuses a foreign origin and an unknown host at once, without a turn', async () => {
    const a = adapter();
    const foreign = upgrade('chat.example', 'https://evil.example');
    const unknown = upgrade('nowhere.example');
    await a.admitUpgrade(foreign.req, foreign.done);
    await a.admitUpgrade(unknown.req, unknown.done);
    expect(foreign.answers).toEqual([[false, 403, ORIGIN_NOT_ALLOWED]]);
    expect(unknown.answers).toEqual([[false, 404, UNKNOWN_HOST_MESSAGE]]);
    expect(refusals).toEqual(['origin', 'unknown_host']);
    expect(a.pendingUpgrades).toBe(0);
  });

  it('answers a failed tenant lookup (down.example: the database erred) with a retryable 503, not the unknown-host 404', async () => {
    const a = adapter();
    const down = upgrade('down.example');
    await a.admitUpgrade(down.req, down.done);
    expect(down.answers).toEqual([[false, 503, TENANT_LOOKUP_FAILED_MESSAGE, { 'Content-Type': 'text/plain', 'Retry-After': '1' }]]);
    expect(refusals).toEqual(['unavailable']);
  });

  it('applies the connection limits before the upgrade completes: 429 for an address over its limit, 503 for a full pod, each with Retry-After; a closed socket frees its place', async () => {
    const connections = new ConnectionAdmission(loadConfig({ BUZZ_MAX_CONNECTIONS: '4', BUZZ_CONNECTION_RESERVE: '0', BUZZ_MAX_CONNECTIONS_PER_IP: '2' }));
    const a = adapter(100, new OutputTurns(), connections);
    const admitted = [upgrade(), upgrade(), upgrade('chat.example', undefined, '198.51.100.2'), upgrade('chat.example', undefined, '198.51.100.3')];
    for (const u of admitted) await a.admitUpgrade(u.req, u.done);
    expect(admitted.map((u) => u.answers)).toEqual([[[true]], [[true]], [[true]], [[true]]]);
    expect(ticketOf(admitted[0].req)?.address).toBe('198.51.100.1');
    const overAddress = upgrade();
    const full = upgrade('chat.example', undefined, '198.51.100.9');
    await a.admitUpgrade(overAddress.req, overAddress.done);
    await a.admitUpgrade(full.req, full.done);
    expect(overAddress.answers).toEqual([[false, 429, 'rate-limited: too many connections from this address (limit 2), retry later', { 'Content-Type': 'text/plain', 'Retry-After': '10' }]]);
    expect(full.answers).toEqual([[false, 503, RELAY_FULL_MESSAGE, { 'Content-Type': 'text/plain', 'Retry-After': '5' }]]);
    expect(refusals).toEqual(['ip_limit', 'capacity']);
    admitted[0].req.socket.emit('close');
    const again = upgrade();
    await a.admitUpgrade(again.req, again.done);
    expect(again.answers).toEqual([[true]]);
  });
});
