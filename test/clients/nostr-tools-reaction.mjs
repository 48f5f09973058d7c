// nostr-tools as a chat client reacts to a channel message: `nip25.finishReactionEvent`, which
// copies the target's e and p tags and adds no `h`. The client publishes one and reads the
// message's reactions back by `#e`; the test's own `#h` subscriber checks what the relay sends
// the channel.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { finalizeEvent } from 'nostr-tools/pure';
import { finishReactionEvent } from 'nostr-tools/nip25';
import { hexToBytes } from 'nostr-tools/utils';

useWebSocketImplementation(WebSocket);
const input = JSON.parse(process.argv[2]);
const sk = hexToBytes(input.sk);
const report = { seen: [], closed: [], published: undefined, id: undefined, hasH: undefined, errors: [] };
const done = (error) => {
  if (error) report.errors.push(error);
  process.stdout.write(JSON.stringify(report) + '\n');
  relay.close();
  process.exit(0);
};
setTimeout(() => done('timeout'), input.timeoutMs);

const relay = new Relay(input.url);
relay.onauth = (template) => finalizeEvent(template, sk);
await relay.connect();
const reaction = finishReactionEvent({ content: '+', created_at: Math.floor(Date.now() / 1000) }, input.target, sk);
report.id = reaction.id;
report.hasH = reaction.tags.some((t) => t[0] === 'h');
try {
  report.published = await relay.publish(reaction);
} catch (err) {
  report.published = `refused: ${err?.message ?? err}`;
}
// Read back as its users fetch a message's reactions: by `#e`, as history (relay.md §2.8 keeps
// live channel events for `#h` subscriptions).
relay.subscribe([{ kinds: [7], '#e': [input.target.id] }], {
  onevent: (ev) => report.seen.push(ev.id),
  oneose: () => done(),
  onclose: (reason) => report.closed.push(reason),
});
