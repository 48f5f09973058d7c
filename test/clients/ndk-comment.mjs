// NDK as its users reply to a chat message: fetch it, `event.reply()` (a NIP-22 kind 1111 comment
// with E/K/P and e/k/p tags, and no `h`), publish, then load the message's comments by `#e`.
import WebSocket from 'ws';
import { reporter } from './script-report.mjs';
import NDK, { NDKPrivateKeySigner, NDKRelayAuthPolicies } from '@nostr-dev-kit/ndk';

globalThis.WebSocket ??= WebSocket;
const input = JSON.parse(process.argv[2]);
const report = { kind: undefined, hasH: undefined, id: undefined, published: undefined, found: [], errors: [] };
const ndk = new NDK({ explicitRelayUrls: [input.url], enableOutboxModel: false, signer: new NDKPrivateKeySigner(input.sk) });
ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk });

const finish = reporter(report, input.timeoutMs, () => { for (const relay of ndk.pool.relays.values()) relay.disconnect(); });

try {
  await ndk.connect(5000);
  const target = await ndk.fetchEvent(input.targetId);
  if (!target) throw new Error('target message not fetched');
  const comment = target.reply();
  comment.content = `a comment ${Date.now()}`;
  await comment.sign();
  report.kind = comment.kind;
  report.hasH = comment.tags.some((t) => t[0] === 'h');
  report.id = comment.id;
  try {
    report.published = (await comment.publish()).size;
  } catch (err) {
    report.published = `refused: ${err?.message ?? err}`;
  }
  const found = await ndk.fetchEvents({ kinds: [1111], '#e': [input.targetId] });
  report.found = [...found].map((e) => e.id);
  finish();
} catch (err) {
  finish(err?.message ?? err);
}
