// applesauce as its users set it up: a Relay (rxjs) with `ws` as its WebSocket, a
// PrivateKeySigner that answers each challenge via relay.authenticate(), a persistent
// subscription() and publish().
import WebSocket from 'ws';
import { Relay } from 'applesauce-relay';
import { PrivateKeySigner } from 'applesauce-signers';
import { filter, input, message, Recorder } from './scenario-common.mjs';

const signer = PrivateKeySigner.fromKey(input.sk);
const relay = new Relay(input.url, { WebSocket });
const rec = new Recorder(() => relay.close());
relay.challenge$.subscribe((challenge) => {
  if (challenge && !relay.authenticated) relay.authenticate(signer).catch((err) => rec.errors.push(`auth: ${err.message}`));
});

relay.subscription(filter).subscribe({
  next: (res) => (res === 'EOSE' ? rec.eoseReached() : rec.event(res)),
  error: (err) => rec.closed.push(String(err?.message ?? err)),
});
const own = await signer.signEvent(message('sent on connect'));
void rec.publish('onConnect', own.id, async () => {
  const res = await relay.publish(own);
  if (!res.ok) throw new Error(res.message);
});
