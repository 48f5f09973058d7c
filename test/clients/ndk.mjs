// NDK as its users set it up: a private-key signer, the signIn auth policy, connect(), then
// subscribe (closeOnEose false) and publish an NDKEvent. Node 20 has no global WebSocket: NDK
// uses `ws`'s, as a Node app would install it.
import WebSocket from 'ws';
import NDK, { NDKEvent, NDKPrivateKeySigner, NDKRelayAuthPolicies } from '@nostr-dev-kit/ndk';
import { filter, input, message, Recorder } from './scenario-common.mjs';

globalThis.WebSocket ??= WebSocket;
// A team relay, not the public network: no outbox model (it would dial public relays).
const ndk = new NDK({ explicitRelayUrls: [input.url], enableOutboxModel: false, signer: new NDKPrivateKeySigner(input.sk) });
ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk });
const rec = new Recorder(() => {
  for (const relay of ndk.pool.relays.values()) relay.disconnect();
});
await ndk.connect(5000);

ndk.subscribe(filter, {
  closeOnEose: false,
  groupable: false,
  onEvent: (ev) => rec.event(ev),
  onEose: () => rec.eoseReached(),
  onClose: () => rec.closed.push('closed'),
});
const own = new NDKEvent(ndk, message('sent on connect'));
await own.sign();
void rec.publish('onConnect', own.id, async () => {
  const relays = await own.publish();
  if (relays.size === 0) throw new Error('published to no relay');
});
