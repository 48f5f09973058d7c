/**
 * What the scale-out tests ask of a running relay over HTTP: bridge queries signed with NIP-98,
 * /readyz, /metrics samples, and a polling wait.
 */
import { createHash, randomUUID } from 'node:crypto';
import { finalizeEvent, type VerifiedEvent } from 'nostr-tools/pure';
import { httpRequest, Identity } from '../harness/nostr-clients.js';
import { RelayProcess } from '../harness/relay-process.js';

const now = () => Math.floor(Date.now() / 1000);

/** A NIP-98 header for POST `path` addressed to `host` (the tenant host the relay checks `u` against). */
export function nip98(id: Identity, host: string, path: string, body: string): string {
  const ev = finalizeEvent(
    {
      kind: 27235,
      created_at: now(),
      tags: [
        ['u', `http://${host}${path}`],
        ['method', 'POST'],
        ['payload', createHash('sha256').update(body).digest('hex')],
        // Two requests in one second must not be the same event (the second would be a replay).
        ['nonce', randomUUID()],
      ],
      content: '',
    },
    id.sk,
  );
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString('base64')}`;
}

export async function query(pod: RelayProcess, id: Identity, filters: unknown, opts: { auth?: string; host?: string } = {}): Promise<{ status: number; body: unknown }> {
  const body = JSON.stringify(filters);
  const host = opts.host ?? `localhost:${pod.port}`;
  const res = await httpRequest(`${pod.httpUrl}/query`, { method: 'POST', headers: { host, authorization: opts.auth ?? nip98(id, host, '/query', body) }, body });
  return { status: res.status, body: JSON.parse(res.body) };
}

export async function readiness(pod: RelayProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await httpRequest(`${pod.httpUrl}/readyz`, { headers: { host: 'localhost' } });
  return { status: res.status, body: JSON.parse(res.body) };
}

/** Sum of the samples of a metric family whose labels include `labels`. */
export async function metric(pod: RelayProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = (await httpRequest(pod.metricsUrl, {})).body;
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return text
    .split('\n')
    .filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && wanted.every((w) => l.includes(w)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

export { eventually } from '../harness/eventually.js';


/** `POST /query` presence synthesis (kinds exactly [20001]) as `reader`; fails unless 200. */
export async function synthesisedPresence(pod: RelayProcess, reader: Identity, authors?: string[]): Promise<VerifiedEvent[]> {
  const res = await query(pod, reader, [{ kinds: [20001], ...(authors ? { authors } : {}) }]);
  if (res.status !== 200) throw new Error(`presence query answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as VerifiedEvent[];
}
