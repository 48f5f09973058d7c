// NDK as its users start a group: `new NDKSimpleGroup(ndk, relaySet)` with NDK's own default id
// (24 mixed-case letters and digits), `createGroup()` (9007), `setMetadata()` (9002), a chat
// message in it, then the group's metadata and member list as NDK loads them (`#d` = the id).
import WebSocket from 'ws';
import { reporter } from './script-report.mjs';
import NDK, { NDKEvent, NDKPrivateKeySigner, NDKRelayAuthPolicies, NDKRelaySet, NDKSimpleGroup } from '@nostr-dev-kit/ndk';

globalThis.WebSocket ??= WebSocket;
const input = JSON.parse(process.argv[2]);
const report = { groupId: undefined, steps: {}, name: undefined, members: [], found: [], errors: [] };
const signer = new NDKPrivateKeySigner(input.sk);
const ndk = new NDK({ explicitRelayUrls: [input.url], enableOutboxModel: false, signer });
ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk });

const finish = reporter(report, input.timeoutMs, () => { for (const relay of ndk.pool.relays.values()) relay.disconnect(); });

async function step(name, fn) {
  try {
    report.steps[name] = (await fn()).size;
  } catch (err) {
    report.steps[name] = `refused: ${err?.message ?? err}`;
  }
}

try {
  await ndk.connect(5000);
  const relaySet = NDKRelaySet.fromRelayUrls([input.url], ndk);
  const group = new NDKSimpleGroup(ndk, relaySet);
  report.groupId = group.id;
  await step('create', () => group.createGroup());
  await step('name', () => group.setMetadata({ name: input.name }));
  const message = new NDKEvent(ndk, { kind: 9, content: `hello ${group.id}`, tags: [['h', group.id]] });
  await step('post', () => message.publish(relaySet));
  report.name = (await group.getMetadata())?.name;
  report.members = (await group.getMembers()).map((u) => u.pubkey);
  const found = await ndk.fetchEvents({ kinds: [9], '#h': [group.id] }, undefined, relaySet);
  report.found = [...found].map((e) => e.id);
  report.postId = message.id;
  finish();
} catch (err) {
  finish(err?.message ?? err);
}
