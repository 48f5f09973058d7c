import { communityKey, communityOfFanoutPattern, fanoutPattern, fanoutTopic, rateLimitKey } from './redis-keys.js';

describe('redis keys', () => {
  const community = '0f0e0d0c-0000-4000-8000-000000000001';
  const pubkey = 'AB'.repeat(32);

  it('prefixes every key with its community and lowercases the components', () => {
    expect(rateLimitKey(community, pubkey, 'msg')).toBe(`buzz:${community}:ratelimit:${'ab'.repeat(32)}:msg`);
    expect(rateLimitKey('other', pubkey, 'msg')).not.toBe(rateLimitKey(community, pubkey, 'msg'));
    expect(communityKey('C1', 'Presence', 'X')).toBe('buzz:c1:presence:x');
  });

  it('names Channel(id) and Global topics under the pattern a pod subscribes to', () => {
    expect(fanoutTopic(community, null)).toBe(`buzz:${community}:fanout:global`);
    expect(fanoutTopic(community, 'chan')).toBe(`buzz:${community}:fanout:channel:chan`);
    expect(fanoutPattern(community)).toBe(`buzz:${community}:fanout:*`);
  });

  it('escapes glob characters so a community pattern cannot match another community', () => {
    expect(fanoutPattern('a*b?[c]')).toBe('buzz:a\\*b\\?\\[c\\]:fanout:*');
  });

  it('recovers the community from its pattern and nothing from other keys', () => {
    expect(communityOfFanoutPattern(fanoutPattern(community))).toBe(community);
    expect(communityOfFanoutPattern(fanoutPattern('a*b?[c]'))).toBe('a*b?[c]');
    expect(communityOfFanoutPattern(rateLimitKey(community, pubkey, 'msg'))).toBeUndefined();
  });
});
