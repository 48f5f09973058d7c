/**
 * The storm bench's client (bench/lib/storm-client.ts) counts history frames by their bytes
 * instead of parsing them: against a scripted relay on a local WebSocket server, it must still
 * count only its current subscription's events, retry on `CLOSED "error: …"`, end served at
 * EOSE, answer the challenge with a signature that verifies, and go straight to its REQ when the
 * relay sends no challenge.
 */
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { verifyEvent, type Event as NostrEvent } from 'nostr-tools/pure';
import { WebSocketServer, type WebSocket } from 'ws';
import { preparedSigner } from '../../bench/lib/fast-sign.js';
import { startStormClient } from '../../bench/lib/storm-client.js';

type Script = (ws: WebSocket, frame: unknown[]) => void;

async function relay(challenge: boolean, script: Script): Promise<{ url: string; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => {
    if (challenge) ws.send(JSON.stringify(['AUTH', 'challenge-1']));
    ws.on('message', (data) => script(ws, JSON.parse(data.toString()) as unknown[]));
  });
  return {
    url: `ws://localhost:${(wss.address() as AddressInfo).port}`,
    close: () => new Promise((r) => wss.close(() => r())),
  };
}

const event = (sub: string, i: number) => JSON.stringify(['EVENT', sub, { id: i.toString(16).padStart(64, '0'), kind: 1, content: `note ${i}` }]);

/** Answers AUTH (OK true only for a valid kind-22242 naming the challenge), then REQ h0 with a few events and a retryable CLOSED, REQ h1 with 50 events amid others' frames. */
const scripted: Script = (ws, [type, a]) => {
  if (type === 'AUTH') {
    const auth = a as NostrEvent;
    const ok = verifyEvent({ ...auth }) && auth.kind === 22242 && auth.tags.some(([k, v]) => k === 'challenge' && v === 'challenge-1');
    ws.send(JSON.stringify(['OK', auth.id, ok, ok ? '' : 'auth-required: bad signature']));
  } else if (type === 'REQ' && a === 'h0') {
    for (let i = 0; i < 3; i++) ws.send(event('h0', i));
    ws.send(JSON.stringify(['CLOSED', 'h0', 'error: database error']));
  } else if (type === 'REQ' && a === 'h1') {
    ws.send(event('h0', 99)); // a late frame of the closed subscription
    for (let i = 0; i < 50; i++) {
      ws.send(event('h1', i));
      if (i === 25) ws.send(event('h10', i)); // a sub id that h1 is a prefix of
    }
    ws.send(JSON.stringify(['EOSE', 'h1']));
  }
};

const options = (url: string, auth: boolean) => ({ relayUrl: url, signer: preparedSigner(randomBytes(32)), auth, filter: { kinds: [1], limit: 50 }, maxRetries: 6, backoffBaseMs: 1, deadlineMs: 20_000 });

describe('storm client', () => {
  it('authenticates, retries a retryable CLOSED and counts only its own subscription\'s history', async () => {
    const r = await relay(true, scripted);
    try {
      const client = startStormClient(options(r.url, true));
      const out = await client.outcome;
      client.close();
      expect(out.result).toBe('served');
      expect(out.retries).toBe(1);
      expect(out.retryReasons).toEqual(['error: database error']);
      expect(out.events).toBe(50);
      expect(out.authMs).toBeGreaterThanOrEqual(0);
    } finally {
      await r.close();
    }
  });

  it('sends its REQ on open when the relay sends no challenge', async () => {
    const r = await relay(false, scripted);
    try {
      const client = startStormClient(options(r.url, false));
      const out = await client.outcome;
      client.close();
      expect(out.result).toBe('served');
      expect(out.events).toBe(50);
      expect(out.authMs).toBeUndefined();
    } finally {
      await r.close();
    }
  });

  it('is refused when its AUTH is', async () => {
    const r = await relay(true, (ws, [type, a]) => {
      if (type === 'AUTH') ws.send(JSON.stringify(['OK', (a as NostrEvent).id, false, 'restricted: banned']));
    });
    try {
      const client = startStormClient(options(r.url, true));
      const out = await client.outcome;
      client.close();
      expect(out.result).toBe('refused');
      expect(out.detail).toBe('AUTH: restricted: banned');
    } finally {
      await r.close();
    }
  });
});
