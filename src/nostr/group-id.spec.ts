import { channelIdOf, GROUP_ID_NAMESPACE, isCanonicalUuid, isNamedGroupId, isUuid, uuidV5 } from './group-id.js';
import { EVENT_REFUSALS } from './event.refusals.js';

describe('group ids', () => {
  it('computes RFC 9562 version 5 UUIDs (the RFC\'s own example: the DNS namespace, www.example.com)', () => {
    expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('maps a UUID to itself in lower case, and a NIP-29 id to its version 5 UUID in the relay namespace', () => {
    expect(channelIdOf('0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9')).toBe('0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9');
    expect(channelIdOf('pizza')).toBe(uuidV5(GROUP_ID_NAMESPACE, 'pizza'));
    expect(channelIdOf('pizza')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Case matters in a NIP-29 id (NDK's default ids are mixed case): two ids, two channels.
    expect(channelIdOf('AbCdEf')).not.toBe(channelIdOf('abcdef'));
    expect(channelIdOf('abc-def_123')).toBe(channelIdOf('abc-def_123'));
  });

  it('refuses what is no group id', () => {
    for (const bad of ['', 'has space', 'emoji🍕', 'x'.repeat(65), 'a/b', 'ä']) expect([bad, channelIdOf(bad)]).toEqual([bad, undefined]);
    expect(isNamedGroupId('x'.repeat(64))).toBe(true);
    expect(isNamedGroupId('0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9')).toBe(false);
    expect(EVENT_REFUSALS.badGroupId.wire).toBe('invalid: group id (h tag) must be a UUID or 1 to 64 letters, digits, - and _');
  });
});

describe('UUIDs', () => {
  const id = '056ceca9-ba79-40dd-a7ea-44d9b3552f43';

  it('a group id may be a UUID in either case; a stored id is the lowercase one', () => {
    expect([isUuid(id), isUuid(id.toUpperCase())]).toEqual([true, true]);
    expect([isCanonicalUuid(id), isCanonicalUuid(id.toUpperCase())]).toEqual([true, false]);
    expect(isCanonicalUuid(channelIdOf(id.toUpperCase())!)).toBe(true);
  });

  it.each([[''], [id.replaceAll('-', '')], [`${id}0`], [` ${id}`], [id.replace('a', 'g')]])('neither takes %p', (bad) => {
    expect([isUuid(bad), isCanonicalUuid(bad)]).toEqual([false, false]);
  });
});
