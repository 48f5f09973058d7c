import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import { asKysely, compileSql, frag, joinFragments, scopeFragment } from './event-sql.js';

const kinds = [1, 7];
const parts = [frag`community_id = ${'c-1'}::uuid`, frag`deleted_at is null`, frag`kind = any(${kinds}::int[]) and pubkey = ${'pk'}`];

describe('SQL fragments', () => {
  it('joins fragments and numbers their values in order', () => {
    expect(compileSql(joinFragments(parts, ' and '))).toEqual({
      text: 'community_id = $1::uuid and deleted_at is null and kind = any($2::int[]) and pubkey = $3',
      params: ['c-1', kinds, 'pk'],
    });
  });

  it('gives Kysely the same statement', () => {
    // A dialect is needed only to compile; nothing connects.
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: {} as never }) });
    const compiled: CompiledQuery = asKysely(joinFragments(parts, ' and ')).compile(db);
    expect({ text: compiled.sql, params: compiled.parameters }).toEqual(compileSql(joinFragments(parts, ' and ')));
  });

  it('writes a scope as a condition on the named column', () => {
    expect(compileSql(scopeFragment({ communityId: 'c', channels: 'any', includeGlobal: true }, 'channel_id')).text).toBe('true');
    expect(compileSql(scopeFragment({ communityId: 'c', channels: 'any', includeGlobal: false }, 'e.channel_id')).text).toBe('e.channel_id is not null');
    expect(compileSql(scopeFragment({ communityId: 'c', channels: ['a', 'b'], includeGlobal: true }, 'channel_id'))).toEqual({
      text: '(channel_id is null or channel_id = any($1::uuid[]))',
      params: [['a', 'b']],
    });
    expect(compileSql(scopeFragment({ communityId: 'c', channels: ['a', 'b'], includeGlobal: false }, 'channel_id')).text).toBe('channel_id = any($1::uuid[])');
    // One pinned channel is an equality, so the channel index can give the page in order.
    expect(compileSql(scopeFragment({ communityId: 'c', channels: ['a'], includeGlobal: false }, 'channel_id'))).toEqual({ text: 'channel_id = $1::uuid', params: ['a'] });
    expect(compileSql(scopeFragment({ communityId: 'c', channels: [], includeGlobal: false }, 'channel_id')).text).toBe('channel_id = any($1::uuid[])');
  });
});
