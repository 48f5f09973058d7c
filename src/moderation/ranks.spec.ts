import { RANK, rankInChannel, type ChannelStanding } from './ranks.js';

const key = (pubkey: string, relay: number, role?: ChannelStanding['role']): ChannelStanding => ({ pubkey, relay: relay as ChannelStanding['relay'], role });

describe('rankInChannel', () => {
  const relayOwner = key('o', RANK.relayOwner, 'owner');
  const alice = key('a', RANK.member, 'owner');

  it('gives relay rank where it outranks every other owner, the channel role elsewhere', () => {
    expect(rankInChannel(key('r', RANK.relayAdmin), [alice])).toBe(RANK.relayAdmin);
    expect(rankInChannel(key('r', RANK.relayAdmin), [relayOwner])).toBe(RANK.none);
    expect(rankInChannel(key('r', RANK.relayAdmin, 'admin'), [relayOwner])).toBe(RANK.channelAdmin);
    expect(rankInChannel(key('r', RANK.relayAdmin), [key('r2', RANK.relayAdmin, 'owner')])).toBe(RANK.none);
    expect(rankInChannel(key('r', RANK.relayAdmin), [])).toBe(RANK.relayAdmin);
  });

  it('lets an owner keep its own relay rank in its channel, and not count itself as a guard', () => {
    expect(rankInChannel(relayOwner, [relayOwner])).toBe(RANK.relayOwner);
    expect(rankInChannel(relayOwner, [relayOwner, key('op', RANK.relayOwner, 'owner')])).toBe(RANK.channelOwner);
    expect(rankInChannel(alice, [alice])).toBe(RANK.channelOwner);
  });

  it('ranks plain roles by the role', () => {
    expect(rankInChannel(key('m', RANK.member, 'member'), [alice])).toBe(RANK.member);
    expect(rankInChannel(key('g', RANK.none, 'guest'), [alice])).toBe(RANK.member);
    expect(rankInChannel(key('n', RANK.none), [alice])).toBe(RANK.none);
  });
});
