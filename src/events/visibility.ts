/**
 * The one visibility rule set for gated kinds (relay.md §1.3): which stored rows a reader may
 * see. Every read path applies it twice: in SQL before LIMIT ({@link visibilityFragment}, so a
 * page or a count holds only rows the reader may see) and per event after the read
 * ({@link eventVisibleToReader}, defence in depth, and the only check live fan-out needs).
 * Both are derived from {@link visibilityRule}; a kind it does not name is visible to everyone
 * who can read its channel.
 */
import { NostrEvent } from '../nostr/nostr.types.js';
import { RawBuilder, sql } from 'kysely';
import { asKysely, frag, joinFragments, sqlText, SqlFragment } from './event-sql.js';
import { AUTHOR_ONLY_KINDS, ENGRAM_KINDS, MODERATOR_ONLY_KINDS, P_GATED_KINDS, RESULT_GATED_KINDS, SHARED_GATED_KINDS, VISIBILITY_GATED_KINDS } from '../nostr/kinds.js';

/**
 * - `nobody`: no client read path serves it (reports, 1984);
 * - `mentioned`: only a reader named by a `p` tag, not even the author (30622, 44200);
 * - `author`: only the author (30300, 30350, 30179);
 * - `author_or_mentioned`: the author or a `p`-tagged reader (gift wraps and the other p-gated
 *   kinds; engrams, whose `p` names the agent's owner);
 * - `author_or_shared`: the author, or anyone when the event has exactly one `["shared","true"]`.
 */
export type VisibilityRule = 'nobody' | 'mentioned' | 'author' | 'author_or_mentioned' | 'author_or_shared';

export function visibilityRule(kind: number): VisibilityRule | undefined {
  if (MODERATOR_ONLY_KINDS.has(kind)) return 'nobody';
  if (RESULT_GATED_KINDS.has(kind)) return 'mentioned';
  if (AUTHOR_ONLY_KINDS.has(kind)) return 'author';
  if (P_GATED_KINDS.has(kind) || ENGRAM_KINDS.has(kind)) return 'author_or_mentioned';
  if (SHARED_GATED_KINDS.has(kind)) return 'author_or_shared';
  return undefined;
}

export function eventVisibleToReader(ev: NostrEvent, reader: string): boolean {
  const mentioned = () => ev.tags.some((t) => t[0] === 'p' && t[1] === reader);
  switch (visibilityRule(ev.kind)) {
    case undefined:
      return true;
    case 'nobody':
      return false;
    case 'mentioned':
      return mentioned();
    case 'author':
      return ev.pubkey === reader;
    case 'author_or_mentioned':
      return ev.pubkey === reader || mentioned();
    case 'author_or_shared':
      return ev.pubkey === reader || ev.tags.filter((t) => t[0] === 'shared' && t[1] === 'true').length === 1;
  }
}

/**
 * {@link eventVisibleToReader} as a condition on an `events` row (columns `kind`, `pubkey`,
 * `tags`, after `prefix`, e.g. `e.`), for a read that can only match `kinds` (undefined: any kind).
 * Undefined when none of those kinds is gated: the chat reads (`kinds:[9]`, …) keep their plans.
 *
 * Tags are checked by position (element 0 the name, element 1 the value), exactly as the per-event
 * rule does; jsonb containment would also match `["x","p",<reader>]`.
 */
export function visibilityFragment(reader: string, kinds: readonly number[] | undefined, prefix = ''): SqlFragment | undefined {
  const byRule = new Map<VisibilityRule, number[]>();
  for (const kind of new Set(kinds ?? VISIBILITY_GATED_KINDS)) {
    const rule = visibilityRule(kind);
    if (rule !== undefined) byRule.set(rule, [...(byRule.get(rule) ?? []), kind]);
  }
  if (byRule.size === 0) return undefined;
  const author = (): SqlFragment => ({ strings: [`${prefix}pubkey = `, ''], values: [Buffer.from(reader, 'hex')] });
  const mentioned = (): SqlFragment =>
    joinFragments([sqlText(`exists (select 1 from jsonb_array_elements(${prefix}tags) vt where vt->>0 = 'p' and vt->>1 = `), frag`${reader}`, sqlText(')')], '');
  const shared = sqlText(`(select count(*) from jsonb_array_elements(${prefix}tags) vt where vt->>0 = 'shared' and vt->>1 = 'true') = 1`);
  const condition: Record<VisibilityRule, () => SqlFragment> = {
    nobody: () => sqlText('false'),
    mentioned,
    author,
    author_or_mentioned: () => joinFragments([sqlText('('), joinFragments([author(), mentioned()], ' or '), sqlText(')')], ''),
    author_or_shared: () => joinFragments([sqlText('('), joinFragments([author(), shared], ' or '), sqlText(')')], ''),
  };
  // The kind lists are our own integer constants, written as literals: the statement's text (and
  // so its cached plan) then depends only on which gated kinds the filter can match.
  const arms = [...byRule].map(([rule, ks]) => joinFragments([sqlText(`when ${prefix}kind = any('{${ks.join(',')}}'::int[]) then `), condition[rule]()], ''));
  return joinFragments([sqlText('(case '), joinFragments(arms, ' '), sqlText(' else true end)')], '');
}

/**
 * The reader's visibility condition for Kysely statements, as `and (…)`, or nothing when there is
 * no reader (a scope's writer-internal read) or the kinds include no gated kind.
 */
export function visibilitySql(reader: string | undefined, kinds: readonly number[] | undefined, prefix = 'e.'): RawBuilder<unknown> {
  const f = reader === undefined ? undefined : visibilityFragment(reader, kinds, prefix);
  return f === undefined ? sql`` : sql`and ${asKysely(f)}`;
}
