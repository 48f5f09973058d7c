// nostr-tools' NIP-29 helpers as their users call them: a SimplePool that answers AUTH, and
// `nip29.loadGroup`, which reads the relay's key from NIP-11 (`pubkey`) and asks for the group's
// 39000/39001/39002 signed by it.
import WebSocket from 'ws';
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool';
import { finalizeEvent } from 'nostr-tools/pure';
import { loadGroup } from 'nostr-tools/nip29';
import { hexToBytes } from 'nostr-tools/utils';

useWebSocketImplementation(WebSocket);
const input = JSON.parse(process.argv[2]);
const sk = hexToBytes(input.sk);
const pool = new SimplePool({ automaticallyAuth: () => (template) => finalizeEvent(template, sk) });
const report = { name: undefined, admins: [], members: [], errors: [] };
const timer = setTimeout(() => finish('timeout'), input.timeoutMs);

function finish(error) {
  clearTimeout(timer);
  if (error) report.errors.push(String(error));
  process.stdout.write(JSON.stringify(report) + '\n');
  pool.close([input.url]);
  process.exit(0);
}

try {
  const group = await loadGroup({ pool, groupReference: { host: new URL(input.url).host, id: input.group }, normalizedRelayURL: input.url });
  report.name = group.metadata.name;
  report.admins = group.admins.map((a) => a.pubkey);
  report.members = (group.members ?? []).map((m) => m.pubkey);
  finish();
} catch (err) {
  finish(err?.message ?? err);
}
