/**
 * Kysely schema types for every table the migrations create (database.md §1). One interface per
 * table, keyed in {@link DB} by the table name. Conventions:
 *
 * - `timestamptz` selects as `Date` (node-postgres parses it) and accepts `Date` or ISO text.
 * - `bigint` selects as `string` (node-postgres keeps int8 exact) and accepts string/number/bigint.
 * - `bytea` is a `Buffer` both ways.
 * - `jsonb` is inserted as JSON text: node-postgres would send a JS array as a Postgres array
 *   literal, so always pass `JSON.stringify(tags)` (or bind `::jsonb` in a `sql` template).
 * - `Generated<>` marks columns with a database default; `search_tsv` is GENERATED ALWAYS and
 *   can never be written.
 */
import type { ColumnType, Generated, Insertable, JSONColumnType, Selectable, Updateable } from 'kysely';

/** `timestamptz NOT NULL` without a default. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** `timestamptz NOT NULL DEFAULT now()`. */
export type TimestampDefaultNow = ColumnType<Date, Date | string | undefined, Date | string>;
/** Nullable `timestamptz`. */
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** Nullable `bigint`: selected as decimal text. */
export type NullableInt8 = ColumnType<
  string | null,
  string | number | bigint | null | undefined,
  string | number | bigint | null
>;

/** The raw Nostr tag array, e.g. `[["e","<hex>"],["h","<uuid>"]]`. */
export type NostrTags = string[][];

export type RelayMemberRole = 'owner' | 'admin' | 'member';
export type ChannelVisibility = 'open' | 'private';
export type ChannelType = 'stream' | 'forum' | 'dm' | 'workflow';
export type ChannelMemberRole = 'owner' | 'admin' | 'member' | 'guest' | 'bot';

export interface CommunitiesTable {
  id: Generated<string>;
  /** Normalised host: lowercase, no trailing dot, default ports dropped. */
  host: string;
  name: string | null;
  thread_replies_in_channel: Generated<boolean>;
  /** The workspace icon (kind 9033): an http(s) or data:image URL. */
  icon: string | null;
  archived_at: NullableTimestamp;
  created_at: TimestampDefaultNow;
}

export interface CommunityHostAliasesTable {
  host: string;
  community_id: string;
}

/** Partitioned by range (created_at); PK (community_id, created_at, id). */
export interface EventsTable {
  community_id: string;
  /** 32-byte event id. */
  id: Buffer;
  /** 32-byte x-only public key. */
  pubkey: Buffer;
  created_at: Timestamp;
  kind: number;
  tags: JSONColumnType<NostrTags>;
  content: string;
  /** Generated and stored; NULL for kinds 1059, 30300, 30622. Selected as tsvector text. */
  search_tsv: ColumnType<string | null, never, never>;
  /** 64-byte Schnorr signature. */
  sig: Buffer;
  received_at: TimestampDefaultNow;
  channel_id: string | null;
  deleted_at: NullableTimestamp;
  /** NIP-33 `d` value; NULL for non-addressable kinds. */
  d_tag: string | null;
  not_before: NullableInt8;
  delivered_at: NullableInt8;
}

/** Partitioned like `events`; PK (community_id, created_at, event_id, pubkey_hex). */
export interface DeliveryLogTable {
  community_id: string;
  event_id: Buffer;
  created_at: Timestamp;
  pubkey_hex: string;
  delivered_at: TimestampDefaultNow;
}

/** PK (community_id, pubkey_hex, event_id). */
export interface EventMentionsTable {
  community_id: string;
  pubkey_hex: string;
  event_id: Buffer;
  event_created_at: Timestamp;
  channel_id: string | null;
  event_kind: number;
}

/** NIP-01's tag index (migration 0018), kept by a trigger on `events`. */
export interface EventTagsTable {
  community_id: string;
  /** One ASCII letter other than `e` and `h`. */
  name: string;
  value: string;
  event_created_at: Timestamp;
  event_id: Buffer;
  event_kind: number;
}

/**
 * PK (community_id, ref_id, event_created_at, event_id) INCLUDE (event_kind): the ids an event's
 * `e`-bearing tags reference (migration 0016), read by e-tag queries instead of the GIN index.
 */
export interface EventRefsTable {
  community_id: string;
  /** 32-byte id of the referenced event. */
  ref_id: Buffer;
  event_created_at: Timestamp;
  event_id: Buffer;
  event_kind: number;
}

/** PK (community_id, event_created_at, event_id). */
export interface ThreadMetadataTable {
  community_id: string;
  event_created_at: Timestamp;
  event_id: Buffer;
  channel_id: string;
  parent_event_id: Buffer | null;
  parent_event_created_at: NullableTimestamp;
  root_event_id: Buffer | null;
  root_event_created_at: NullableTimestamp;
  depth: Generated<number>;
  reply_count: Generated<number>;
  descendant_count: Generated<number>;
  last_reply_at: NullableTimestamp;
  broadcast: Generated<boolean>;
}

/** PK (community_id, pubkey). */
export interface RelayMembersTable {
  community_id: string;
  pubkey: string;
  role: ColumnType<RelayMemberRole, RelayMemberRole | undefined, RelayMemberRole>;
  added_by: string | null;
  created_at: TimestampDefaultNow;
}

/** PK (community_id, agent_pubkey); first write wins (relay.md §2.5 step 5). */
export interface AgentOwnersTable {
  community_id: string;
  agent_pubkey: string;
  owner_pubkey: string;
  created_at: TimestampDefaultNow;
}

/** PK (community_id, id). */
export interface ChannelsTable {
  community_id: string;
  id: Generated<string>;
  name: string;
  about: string | null;
  visibility: ColumnType<ChannelVisibility, ChannelVisibility | undefined, ChannelVisibility>;
  channel_type: ColumnType<ChannelType, ChannelType | undefined, ChannelType>;
  created_by: string | null;
  created_at: TimestampDefaultNow;
  archived_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
  /** The NIP-29 group id the channel was created with, when it is not the channel's UUID. */
  group_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** PK (community_id, channel_id, pubkey). */
export interface ChannelMembersTable {
  community_id: string;
  channel_id: string;
  pubkey: string;
  role: ColumnType<ChannelMemberRole, ChannelMemberRole | undefined, ChannelMemberRole>;
  joined_at: TimestampDefaultNow;
  removed_at: NullableTimestamp;
}

/** PK (community_id, channel_id, code): NIP-29 invite codes (kind 9009), each spent by one join. */
export interface ChannelInvitesTable {
  community_id: string;
  channel_id: string;
  code: string;
  created_by: string;
  event_id: Buffer;
  created_at: TimestampDefaultNow;
  expires_at: Date;
  used_by: string | null;
  used_at: Date | null;
}

/** PK (community_id, reaction_event_id); unique (community_id, target_event_id, actor_pubkey,
 * emoji) WHERE deleted_at IS NULL. */
export interface ReactionsTable {
  community_id: string;
  target_event_id: Buffer;
  actor_pubkey: string;
  emoji: string;
  reaction_event_id: Buffer;
  created_at: TimestampDefaultNow;
  deleted_at: NullableTimestamp;
}

/** PK (community_id, pubkey). */
export interface BansTable {
  community_id: string;
  pubkey: string;
  reason: string | null;
  banned_by: string | null;
  created_at: TimestampDefaultNow;
  expires_at: NullableTimestamp;
}

/** PK (community_id, pubkey). */
export interface TimeoutsTable {
  community_id: string;
  pubkey: string;
  reason: string | null;
  timed_out_by: string | null;
  created_at: TimestampDefaultNow;
  until: Timestamp;
}

/** PK (community_id, pubkey). */
export interface PubkeyAllowlistTable {
  community_id: string;
  pubkey: string;
  added_by: string | null;
  created_at: TimestampDefaultNow;
}

export type ReportTargetKind = 'event' | 'pubkey';
export type ReportStatus = 'open' | 'resolved' | 'dismissed';

/** The moderator queue: one NIP-56 report (kind 1984) per row, unique per (community, report event). */
export interface ModerationReportsTable {
  id: Generated<string>;
  community_id: string;
  report_event_id: string;
  reporter_pubkey: string;
  target_kind: ReportTargetKind;
  target_pubkey: string;
  target_event_id: string | null;
  channel_id: string | null;
  report_type: string;
  note: string | null;
  status: Generated<ReportStatus>;
  resolution_action: string | null;
  resolved_by: string | null;
  resolved_at: NullableTimestamp;
  created_at: TimestampDefaultNow;
}

/** The moderation audit trail: one row per decision, written with the change it records. */
export interface ModerationActionsTable {
  id: Generated<string>;
  community_id: string;
  /** Null for the operator CLI. */
  actor_pubkey: string | null;
  action: string;
  target_pubkey: string | null;
  target_event_id: string | null;
  report_id: string | null;
  command_event_id: string | null;
  reason: string | null;
  expires_at: NullableTimestamp;
  created_at: TimestampDefaultNow;
}

/** PK (community_id, event_id). */
export interface ArtifactHeadsTable {
  community_id: string;
  event_id: Buffer;
}

/** Exactly one row, id = 1 (database.md §1.5). */
export interface ReplicaHeartbeatTable {
  id: number;
  epoch: Generated<string>;
  token: ColumnType<string, string | number | bigint | undefined, string | number | bigint>;
}

export interface OperatorGlobalTablesTable {
  table_name: string;
}

export interface DB {
  communities: CommunitiesTable;
  community_host_aliases: CommunityHostAliasesTable;
  events: EventsTable;
  delivery_log: DeliveryLogTable;
  event_mentions: EventMentionsTable;
  event_refs: EventRefsTable;
  event_tags: EventTagsTable;
  thread_metadata: ThreadMetadataTable;
  relay_members: RelayMembersTable;
  agent_owners: AgentOwnersTable;
  channels: ChannelsTable;
  channel_members: ChannelMembersTable;
  channel_invites: ChannelInvitesTable;
  reactions: ReactionsTable;
  bans: BansTable;
  timeouts: TimeoutsTable;
  pubkey_allowlist: PubkeyAllowlistTable;
  moderation_reports: ModerationReportsTable;
  moderation_actions: ModerationActionsTable;
  artifact_heads: ArtifactHeadsTable;
  replica_heartbeat: ReplicaHeartbeatTable;
  _operator_global_tables: OperatorGlobalTablesTable;
}

export type CommunityRecord = Selectable<CommunitiesTable>;
export type NewCommunityRecord = Insertable<CommunitiesTable>;
export type EventRecord = Selectable<EventsTable>;
export type NewEventRecord = Insertable<EventsTable>;
export type EventRecordUpdate = Updateable<EventsTable>;
export type ChannelRecord = Selectable<ChannelsTable>;
export type NewChannelRecord = Insertable<ChannelsTable>;
export type ChannelMemberRecord = Selectable<ChannelMembersTable>;
export type RelayMemberRecord = Selectable<RelayMembersTable>;
export type ReactionRecord = Selectable<ReactionsTable>;
export type ThreadMetadataRecord = Selectable<ThreadMetadataTable>;
export type ReplicaHeartbeatRecord = Selectable<ReplicaHeartbeatTable>;
