// applesauce as its users invite someone to a private group: the admin signs
// `CreateGroupInviteFactory.create(group)` (a 9009 without a code) and publishes it; the guest
// signs `GroupJoinRequestFactory.create(group, reason, code)` with the code the admin shared (the
// invite's event id) and publishes it; then the guest reads the group's messages. Each signer on
// its own applesauce Relay, authenticating when challenged.
import WebSocket from 'ws';
import { reporter } from './script-report.mjs';
import { Relay } from 'applesauce-relay';
import { PrivateKeySigner } from 'applesauce-signers';
import { CreateGroupInviteFactory, GroupJoinRequestFactory } from 'applesauce-common/factories';

const input = JSON.parse(process.argv[2]);
const report = { invite: undefined, join: undefined, read: undefined, errors: [] };
const relays = [];
const finish = reporter(report, input.timeoutMs, () => relays.forEach((relay) => relay.close()));

function connect(signer) {
  const relay = new Relay(input.url, { WebSocket });
  relays.push(relay);
  relay.challenge$.subscribe((challenge) => {
    if (challenge && !relay.authenticated) relay.authenticate(signer).catch((err) => report.errors.push(`auth: ${err.message}`));
  });
  return relay;
}

async function publish(relay, event) {
  const res = await relay.publish(event);
  return res.ok ? (res.message ? `ok: ${res.message}` : 'ok') : `refused: ${res.message}`;
}

try {
  const group = { id: input.group, relay: input.url };
  const admin = PrivateKeySigner.fromKey(input.adminSk);
  const guest = PrivateKeySigner.fromKey(input.guestSk);
  const invite = await CreateGroupInviteFactory.create(group).sign(admin);
  report.invite = await publish(connect(admin), invite);
  const guestRelay = connect(guest);
  const join = await GroupJoinRequestFactory.create(group, 'invited', invite.id).sign(guest);
  report.join = await publish(guestRelay, join);
  const events = [];
  await new Promise((resolve, reject) =>
    guestRelay.request({ kinds: [9], '#h': [input.group] }).subscribe({ next: (e) => events.push(e.id), complete: resolve, error: reject }),
  );
  report.read = events;
  finish();
} catch (err) {
  finish(err?.message ?? err);
}
