// applesauce as a chat client reacts to a channel message: `ReactionFactory.create(target, '+')`,
// which tags the target (`e`, `p`, `k`) and adds no `h`. The client publishes it on an applesauce
// Relay that authenticates when challenged and reads the message's reactions back by `#e`; the
// test's own `#h` subscriber checks what the relay sends the channel.
import WebSocket from 'ws';
import { reporter } from './script-report.mjs';
import { Relay } from 'applesauce-relay';
import { PrivateKeySigner } from 'applesauce-signers';
import { ReactionFactory } from 'applesauce-common/factories';

const input = JSON.parse(process.argv[2]);
const report = { seen: [], closed: [], published: undefined, id: undefined, hasH: undefined, errors: [] };
const signer = PrivateKeySigner.fromKey(input.sk);
const relay = new Relay(input.url, { WebSocket });
const done = reporter(report, input.timeoutMs, () => relay.close());
relay.challenge$.subscribe((challenge) => {
  if (challenge && !relay.authenticated) relay.authenticate(signer).catch((err) => report.errors.push(`auth: ${err.message}`));
});

try {
  const reaction = await ReactionFactory.create(input.target, '+').sign(signer);
  report.id = reaction.id;
  report.hasH = reaction.tags.some((t) => t[0] === 'h');
  const res = await relay.publish(reaction);
  report.published = res.ok ? res.message ?? '' : `refused: ${res.message}`;
  relay.request({ kinds: [7], '#e': [input.target.id] }).subscribe({
    next: (ev) => report.seen.push(ev.id),
    complete: () => done(),
    error: (err) => {
      report.closed.push(String(err?.message ?? err));
      done();
    },
  });
} catch (err) {
  done(err?.message ?? err);
}
