// nostr-tools `SimplePool` with `automaticallyAuth`: the pool answers the relay's challenge with
// the user's key; subscribe and publish straight away (the pool connects on demand).
import WebSocket from 'ws';
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool';
import { finalizeEvent } from 'nostr-tools/pure';
import { filter, input, Recorder, signed, sk } from './scenario-common.mjs';

useWebSocketImplementation(WebSocket);
const pool = new SimplePool({ automaticallyAuth: () => async (template) => finalizeEvent(template, sk) });
const rec = new Recorder(() => pool.destroy());

const own = signed('sent on connect');
pool.subscribe([input.url], filter, {
  onevent: (ev) => rec.event(ev),
  oneose: () => rec.eoseReached(),
  onclose: (reasons) => rec.closed.push(...reasons.map((r) => r.reason)),
});
void rec.publish('onConnect', own.id, () => Promise.any(pool.publish([input.url], own)));
