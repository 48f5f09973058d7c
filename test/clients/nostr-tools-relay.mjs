// nostr-tools `Relay`, as its users set it up: onauth before connect(), so the challenge that
// arrives on connect is answered; subscribe and publish as soon as connect() resolves.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { finalizeEvent } from 'nostr-tools/pure';
import { filter, input, Recorder, signed, sk } from './scenario-common.mjs';

useWebSocketImplementation(WebSocket);
const relay = new Relay(input.url);
relay.onauth = (template) => finalizeEvent(template, sk);
const rec = new Recorder(() => relay.close());
await relay.connect();

const own = signed('sent on connect');
relay.subscribe([filter], {
  onevent: (ev) => rec.event(ev),
  oneose: () => rec.eoseReached(),
  onclose: (reason) => rec.closed.push(reason),
});
void rec.publish('onConnect', own.id, () => relay.publish(own));
