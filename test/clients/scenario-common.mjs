/**
 * The shared half of a real-client scenario (run by test/clients/real-clients.test.ts, one child
 * `node` process per run): the input the test passes as JSON in argv[2], and a recorder whose
 * JSON the test asserts on. Each library's script configures its client the way its users do,
 * subscribes to the channel and publishes one message right after connecting (before its AUTH
 * lands). Once the subscription's stored events are in (EOSE), another member publishes from its
 * own connection (a plain WebSocket here), and that message must reach the library live: a
 * library that echoes its own publishes locally cannot pass for the relay.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { finalizeEvent } from 'nostr-tools/pure';
import { hexToBytes } from 'nostr-tools/utils';

/** { url, sk, peerSk (hex), channel, timeoutMs } */
export const input = JSON.parse(process.argv[2]);
export const sk = hexToBytes(input.sk);
const peerSk = hexToBytes(input.peerSk);
export const filter = { kinds: [9], '#h': [input.channel] };

/** A channel message; the nonce keeps two runs in the same second from sending the same event. */
export function message(content) {
  return { kind: 9, created_at: Math.floor(Date.now() / 1000), tags: [['h', input.channel]], content: `${content} ${randomUUID()}` };
}

export function signed(content) {
  return finalizeEvent(message(content), sk);
}

/** Publishes `ev` from its own authenticated connection; resolves on OK true. */
function publishRaw(ev) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(input.url);
    ws.on('error', reject);
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame[0] === 'AUTH') {
        const tags = [['relay', input.url], ['challenge', frame[1]]];
        const auth = finalizeEvent({ kind: 22242, created_at: Math.floor(Date.now() / 1000), tags, content: '' }, peerSk);
        ws.send(JSON.stringify(['AUTH', auth]));
        ws.send(JSON.stringify(['EVENT', ev]));
      } else if (frame[0] === 'OK' && frame[1] === ev.id) {
        ws.close();
        if (frame[2]) resolve();
        else reject(new Error(frame[3]));
      }
    });
  });
}

export class Recorder {
  history = [];
  live = [];
  eose = false;
  closed = [];
  /** publish label → { ok, reason } */
  published = {};
  ids = {};
  errors = [];
  /** ms since start when the subscription's EOSE, and the end of the run, came (for reading a slow run). */
  marks = {};
  #started = Date.now();
  #pending = 0;
  #done = false;
  #liveWanted;
  #finish;

  /** `finish` closes the client before the process exits. */
  constructor(finish) {
    this.#finish = finish;
    setTimeout(() => this.end('timeout'), input.timeoutMs);
  }

  event(ev) {
    (this.eose ? this.live : this.history).push(ev.id);
    this.#check();
  }

  /** The subscription's EOSE: the peer publishes, and the run ends once that event arrives. */
  eoseReached() {
    if (this.eose) return;
    this.eose = true;
    this.marks.eose = Date.now() - this.#started;
    const ev = finalizeEvent(message('live from a peer'), peerSk);
    this.#liveWanted = ev.id;
    void this.publish('peer', ev.id, () => publishRaw(ev));
  }

  async publish(label, id, run) {
    this.ids[label] = id;
    this.#pending += 1;
    try {
      await run();
      this.published[label] = { ok: true };
    } catch (err) {
      this.published[label] = { ok: false, reason: String(err?.message ?? err) };
    }
    this.#pending -= 1;
    this.#check();
  }

  #check() {
    const arrived = [...this.history, ...this.live];
    if (this.#liveWanted !== undefined && arrived.includes(this.#liveWanted) && this.#pending === 0) this.end();
  }

  end(error) {
    if (this.#done) return;
    this.#done = true;
    if (error) this.errors.push(error);
    this.marks.end = Date.now() - this.#started;
    const { history, live, eose, closed, published, ids, errors, marks } = this;
    process.stdout.write(JSON.stringify({ history, live, eose, closed, published, ids, errors, marks }) + '\n');
    Promise.resolve()
      .then(() => this.#finish?.())
      .catch(() => undefined)
      .finally(() => process.exit(0));
  }
}
