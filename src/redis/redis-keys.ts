/**
 * Every Redis key and pub/sub topic the relay uses is community-prefixed
 * (`buzz:<community>:…`, relay.md §2.4, §2.8, §3.1), with lowercase components so
 * that one tenant's key can never spell another's.
 */
export function communityKey(communityId: string, ...parts: string[]): string {
  return ['buzz', communityId, ...parts].join(':').toLowerCase();
}

/** Pub/sub topic for a live event: `Channel(id)` or `Global` (§2.8). */
export function fanoutTopic(communityId: string, channelId: string | null): string {
  return channelId === null ? communityKey(communityId, 'fanout', 'global') : communityKey(communityId, 'fanout', 'channel', channelId);
}

/** The pattern a pod subscribes to for one community's topics (glob characters in the id escaped). */
export function fanoutPattern(communityId: string): string {
  return `${communityKey(communityId, 'fanout').replace(/[*?[\]\\]/g, (c) => `\\${c}`)}:*`;
}

/** The community a fanoutPattern() was made for; undefined for any other string. */
export function communityOfFanoutPattern(pattern: string): string | undefined {
  const m = /^buzz:(.+):fanout:\*$/.exec(pattern);
  return m ? m[1].replace(/\\(.)/g, '$1') : undefined;
}

export function rateLimitKey(communityId: string, pubkey: string, bucket: 'msg' | 'api' | 'ws'): string {
  return communityKey(communityId, 'ratelimit', pubkey, bucket);
}

export function replayKey(communityId: string, eventId: string): string {
  return communityKey(communityId, 'nip98', eventId);
}

export function presenceKey(communityId: string, pubkey: string): string {
  return communityKey(communityId, 'presence', pubkey);
}

/** Cross-pod connection control (bans and revocations to enforce on open sockets, relay.md §2.9). */
export function controlTopic(communityId: string): string {
  return communityKey(communityId, 'control');
}

/** Every community's control topic: a pod enforces revocations for whatever sockets it holds. */
export const CONTROL_PATTERN = 'buzz:*:control';

/** True for a live-event topic of fanoutTopic(), false for control and anything else. */
export function isFanoutTopic(topic: string): boolean {
  return /^buzz:[^:]+:fanout:/.test(topic);
}
