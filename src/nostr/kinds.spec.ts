import {
  AUTHOR_ONLY_KINDS,
  GLOBAL_ONLY_KINDS,
  MEMBERSHIP_NOTIFICATION_KINDS,
  P_GATED_KINDS,
  REQUIRES_CHANNEL_KINDS,
  RESULT_GATED_KINDS,
  RELAY_ONLY_KINDS,
  SHARED_GATED_KINDS,
  isAddressable,
  isEphemeral,
  isGlobalOnlyKind,
  isKnownKind,
  isPrivateKind,
  isRelayOnlyKind,
  isReplaceable,
  kindMetricLabel,
  kindMetricLabels,
  requiresChannel,
} from './kinds.js';

const sorted = (set: ReadonlySet<number>) => [...set].sort((a, b) => a - b);

describe('kind ranges (§1.3)', () => {
  it.each([
    [0, true],
    [1, false],
    [3, true],
    [41, false],
    [9999, false],
    [10000, true],
    [19999, true],
    [20000, false],
  ])('isReplaceable(%i) is %s', (kind, expected) => {
    expect(isReplaceable(kind)).toBe(expected);
  });

  it.each([
    [19999, false],
    [20000, true],
    [22242, true],
    [29999, true],
    [30000, false],
  ])('isEphemeral(%i) is %s', (kind, expected) => {
    expect(isEphemeral(kind)).toBe(expected);
  });

  it.each([
    [29999, false],
    [30000, true],
    [39999, true],
    [40000, false],
  ])('isAddressable(%i) is %s', (kind, expected) => {
    expect(isAddressable(kind)).toBe(expected);
  });

  it('keeps the three storage classes disjoint over the whole kind space', () => {
    const overlapping: number[] = [];
    for (let kind = 0; kind <= 65_535; kind++) {
      const classes = [isReplaceable(kind), isEphemeral(kind), isAddressable(kind)].filter(Boolean);
      if (classes.length > 1) overlapping.push(kind);
    }
    expect(overlapping).toEqual([]);
  });
});

describe('gated sets match the §1.3 table exactly', () => {
  it.each<[string, ReadonlySet<number>, number[]]>([
    ['P_GATED_KINDS', P_GATED_KINDS, [1059, 24200, 30622, 44100, 44101, 44200]],
    ['RESULT_GATED_KINDS', RESULT_GATED_KINDS, [30622, 44200]],
    ['AUTHOR_ONLY_KINDS', AUTHOR_ONLY_KINDS, [30179, 30300, 30350]],
    ['SHARED_GATED_KINDS', SHARED_GATED_KINDS, [30175, 30178]],
  ])('%s', (_name, set, expected) => {
    expect(sorted(set)).toEqual(expected);
  });

  it('result-gated kinds are also p-gated', () => {
    for (const kind of RESULT_GATED_KINDS) expect(P_GATED_KINDS.has(kind)).toBe(true);
  });
});

describe('channel derivation sets (§5.2 step 9)', () => {
  it('requires a channel for the message, edit, diff, canvas, forum and NIP-29 admin kinds', () => {
    for (const kind of [9, 40002, 40003, 40008, 40100, 45001, 45002, 45003, 9000, 9001, 9002, 9005, 9008, 9022]) {
      expect({ kind, requires: requiresChannel(kind) }).toEqual({ kind, requires: true });
    }
  });

  it('does not require h for create/join, reactions, deletions, gift wraps or global kinds', () => {
    for (const kind of [9007, 9021, 7, 5, 1059, 0, 1, 3, 30023]) {
      expect({ kind, requires: requiresChannel(kind) }).toEqual({ kind, requires: false });
    }
  });

  it('forces the spec-listed global-only kinds to no channel', () => {
    const listed = [0, 1, 3, 10000, 10001, 10002, 10003, 10030, 30000, 30003, 30023, 30030, 30078, 30315, 9035, 9036];
    for (const kind of listed) expect({ kind, global: isGlobalOnlyKind(kind) }).toEqual({ kind, global: true });
  });

  it('never classifies a kind as both global-only and channel-required', () => {
    for (const kind of GLOBAL_ONLY_KINDS) expect(REQUIRES_CHANNEL_KINDS.has(kind)).toBe(false);
  });
});

describe('relay-only kinds (§5.2 step 1)', () => {
  it('includes the NIP-43 snapshot, overlays and relay-signed state', () => {
    for (const kind of [13534, 39005, 39006, 39000, 39001, 39002, 39003, 8000, 8001, 40099, 30622]) {
      expect({ kind, relayOnly: isRelayOnlyKind(kind) }).toEqual({ kind, relayOnly: true });
    }
  });

  it('leaves client kinds and the separately-worded membership notifications out', () => {
    for (const kind of [9, 40002, 28936, 9021, 44100, 44101]) {
      expect({ kind, relayOnly: isRelayOnlyKind(kind) }).toEqual({ kind, relayOnly: false });
    }
    expect(sorted(MEMBERSHIP_NOTIFICATION_KINDS)).toEqual([44100, 44101]);
  });
});

describe('isPrivateKind (FTS exclusion, §2.7b)', () => {
  it('is true exactly for 1059, 30300 and 30622', () => {
    const privateKinds: number[] = [];
    for (let kind = 0; kind <= 65_535; kind++) if (isPrivateKind(kind)) privateKinds.push(kind);
    expect(privateKinds).toEqual([1059, 30300, 30622]);
  });
});

describe('kindMetricLabel', () => {
  it('keeps known kinds as their number', () => {
    expect(kindMetricLabel(9)).toBe('9');
    expect(kindMetricLabel(40002)).toBe('40002');
    expect(kindMetricLabel(24200)).toBe('24200');
  });

  it('folds unknown kinds into other', () => {
    expect(kindMetricLabel(12345)).toBe('other');
    expect(kindMetricLabel(65535)).toBe('other');
    expect(kindMetricLabel(2)).toBe('other');
  });

  it('has a small, closed label vocabulary covering the whole kind space', () => {
    const vocabulary = new Set(kindMetricLabels());
    expect(vocabulary.size).toBeLessThan(200);
    for (let kind = 0; kind <= 65_535; kind++) {
      if (!vocabulary.has(kindMetricLabel(kind))) throw new Error(`label for ${kind} outside the vocabulary`);
    }
  });
});

describe('known kinds (§5.2 step 6)', () => {
  it('knows the chat, NIP-29, NIP-01 and relay-signed kinds and nothing in between', () => {
    for (const kind of [0, 1, 3, 5, 7, 9, 1059, 9000, 9007, 9021, 10002, 30023, 39000, 40002, 45001]) expect(isKnownKind(kind)).toBe(true);
    for (const kind of [2, 4, 12345, 31999, 65535]) expect(isKnownKind(kind)).toBe(false);
  });
});
