/**
 * The abuse bench's attacks, one per finding of issue 27, at the sizes the issue gives (a
 * `scale` below 1 shrinks the counts: keys, sockets and filter values), and the frames they send.
 * Keys are free on an open relay, so an attacker uses as many as its scenario says.
 */
import { randomBytes } from 'node:crypto';

export const SCENARIOS = ['preauth-hold', 'live-subs', 'expensive-filters', 'large-readers', 'ws-flood-ip', 'key-sockets', 'key-starves-reads', 'count-search'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** What a scenario's attacker does (lib/abuse-attack.child.ts runs it). */
export type AttackKind = 'preauth' | 'frames' | 'sockets';

/** Stored data a scenario needs before the relay under test starts. */
export type SeedKind = 'none' | 'tagged' | 'big-notes' | 'text';

export interface AttackPlan {
  readonly scenario: ScenarioName;
  readonly kind: AttackKind;
  readonly relayUrl: string;
  /** Headers every attacker socket sends (the client-address header, when asked for). */
  readonly headers: Record<string, string>;
  /** Keys, each with its own socket(s). */
  readonly keys: number;
  /** Sockets in all (preauth, sockets) or per key (frames). */
  readonly sockets: number;
  /** `frames`: REQ or COUNT frames per key per second. */
  readonly ratePerKey: number;
  /** `frames`: the verb, whether a subscription is closed at its EOSE, and the filters as JSON text. */
  readonly verb: 'REQ' | 'COUNT';
  readonly closeAtEose: boolean;
  /** `preauth`: frames held per socket and their size. */
  readonly frames: number;
  readonly frameBytes: number;
  /** Filter values per list (scaled); see filtersJson. */
  readonly values: number;
  /** `large-readers`: the key whose notes the readers ask for. */
  readonly author?: string;
}

export interface ScenarioDefaults {
  readonly description: string;
  readonly kind: AttackKind;
  readonly seed: SeedKind;
  readonly keys: number;
  readonly sockets: number;
  readonly ratePerKey: number;
  readonly verb: 'REQ' | 'COUNT';
  readonly closeAtEose: boolean;
  readonly frames: number;
  readonly frameBytes: number;
  readonly values: number;
  readonly seconds: number;
}

const base = { keys: 1, sockets: 1, ratePerKey: 0, verb: 'REQ', closeAtEose: true, frames: 0, frameBytes: 0, values: 0, seconds: 20 } as const;

export const SCENARIO_DEFAULTS: Record<ScenarioName, ScenarioDefaults> = {
  'preauth-hold': {
    ...base,
    description: '1,000 sockets that never authenticate, each holding 30 × 8 KB frames, reconnecting when closed',
    kind: 'preauth',
    seed: 'none',
    sockets: 1000,
    frames: 30,
    frameBytes: 8192,
  },
  'live-subs': {
    ...base,
    description: 'limit:0 subscriptions of 3 filters × 2,000 values from 10 keys, each at its quota (10 REQ/s), never closed',
    kind: 'frames',
    seed: 'none',
    keys: 10,
    ratePerKey: 10,
    closeAtEose: false,
    values: 2000,
    seconds: 45,
  },
  'expensive-filters': {
    ...base,
    description: '25 keys at 10 REQ/s: no kinds, 8 tag keys × 250 values plus a 1,000-value #e filter',
    kind: 'frames',
    seed: 'tagged',
    keys: 25,
    ratePerKey: 10,
    values: 250,
  },
  'large-readers': {
    ...base,
    description: '20 keys, each sending a 10-filter REQ over 250 KB notes (50 per filter) every 1.5 s',
    kind: 'frames',
    seed: 'big-notes',
    keys: 20,
    ratePerKey: 1 / 1.5,
    values: 50,
  },
  'ws-flood-ip': {
    ...base,
    description: 'one address opens 10,100 authenticated idle sockets (one key each)',
    kind: 'sockets',
    seed: 'none',
    keys: 10_100,
    sockets: 10_100,
  },
  'key-sockets': {
    ...base,
    description: 'one key opens 1,000 authenticated sockets as fast as it can',
    kind: 'sockets',
    seed: 'none',
    keys: 1,
    sockets: 1000,
  },
  'key-starves-reads': {
    ...base,
    description: 'one key at 10 REQ/s of the expensive filters (--keys 5: five keys)',
    kind: 'frames',
    seed: 'tagged',
    keys: 1,
    ratePerKey: 10,
    values: 250,
  },
  'count-search': {
    ...base,
    description: '30 keys × 10 COUNT/s × 10 search filters over common words',
    kind: 'frames',
    seed: 'text',
    keys: 30,
    ratePerKey: 10,
    verb: 'COUNT',
    values: 10,
  },
};

const hex64 = () => randomBytes(32).toString('hex');
const list = (n: number, item: () => string) => Array.from({ length: n }, item);

/** Tag names of the expensive filter (8, the shape limit). */
export const EXPENSIVE_TAG_NAMES = ['p', 't', 'a', 'd', 'k', 'r', 'g', 'l'];
/** The words the text seed writes and count-search looks for. */
export const SEARCH_WORDS = ['relay', 'channel', 'message', 'thread', 'river', 'garden', 'signal', 'window', 'orange', 'silver', 'market', 'planet'];

/**
 * The filters of one REQ or COUNT as JSON text, `"f1","f2",…` without brackets (the frame is
 * `["REQ","<sub id>",` + this + `]`): built once per key, the values random so no key's filters
 * match another's.
 */
export function filtersJson(plan: AttackPlan): string {
  const v = plan.values;
  switch (plan.scenario) {
    case 'live-subs': {
      // 2,000 values per filter (the terms limit): half authors, half #p.
      const half = Math.max(1, Math.floor(v / 2));
      return list(3, () => JSON.stringify({ authors: list(half, hex64), '#p': list(half, hex64), limit: 0 })).join(',');
    }
    case 'expensive-filters':
    case 'key-starves-reads': {
      const tags = Object.fromEntries(EXPENSIVE_TAG_NAMES.map((name) => [`#${name}`, list(v, hex64)]));
      return [JSON.stringify(tags), JSON.stringify({ '#e': list(Math.min(1000, v * 4), hex64) })].join(',');
    }
    case 'large-readers':
      return Array.from({ length: 10 }, (_, i) => JSON.stringify({ kinds: [1], authors: [plan.author], since: i, limit: v })).join(',');
    case 'count-search':
      return Array.from({ length: v }, (_, i) => JSON.stringify({ kinds: [1], search: SEARCH_WORDS[i % SEARCH_WORDS.length] })).join(',');
    default:
      return '';
  }
}

/** The pre-AUTH frame of `preauth-hold`: an EVENT whose content brings it to `bytes`. */
export function preauthFrame(bytes: number): string {
  const head = '["EVENT",{"kind":1,"tags":[],"created_at":0,"content":"';
  return `${head}${'x'.repeat(Math.max(0, bytes - head.length - 3))}"}]`;
}
