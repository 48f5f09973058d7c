import type { Kysely } from 'kysely';

import * as m0001 from './0001_gen_random_uuid.js';
import * as m0002 from './0002_communities.js';
import * as m0003 from './0003_events.js';
import * as m0004 from './0004_events_indexes.js';
import * as m0005 from './0005_delivery_log.js';
import * as m0006 from './0006_event_mentions.js';
import * as m0007 from './0007_thread_metadata.js';
import * as m0008 from './0008_relay_members.js';
import * as m0009 from './0009_channels.js';
import * as m0010 from './0010_reactions.js';
import * as m0011 from './0011_moderation.js';
import * as m0012 from './0012_artifact_heads.js';
import * as m0013 from './0013_operator_global_tables.js';
import * as m0014 from './0014_replica_heartbeat.js';
import * as m0015 from './0015_events_created_at_floor_guard.js';
import * as m0016 from './0016_event_refs.js';
import * as m0017 from './0017_agent_owners.js';
import * as m0018 from './0018_event_tags.js';
import * as m0019 from './0019_prune_deleted_events.js';
import * as m0020 from './0020_channel_invites.js';
import * as m0021 from './0021_bans_notify.js';
import * as m0022 from './0022_moderation_reports.js';
import * as m0023 from './0023_channel_group_ids.js';

/**
 * Every migration, keyed by its file name. Static on purpose: the relay is compiled with tsc and
 * must not depend on reading a directory at runtime. Kysely applies them in key order, and keys
 * are zero-padded so that order is the numeric one. Append new migrations; never rename or
 * reorder applied ones (the names are recorded in `kysely_migration`).
 */
/** One migration: the shape Kysely's Migrator runs (declared here: kysely 0.29 moved its own to `kysely/migration`). */
export interface Migration {
  up(db: Kysely<any>): Promise<void>;
  down?(db: Kysely<any>): Promise<void>;
}

export const migrations: Record<string, Migration> = {
  '0001_gen_random_uuid': m0001,
  '0002_communities': m0002,
  '0003_events': m0003,
  '0004_events_indexes': m0004,
  '0005_delivery_log': m0005,
  '0006_event_mentions': m0006,
  '0007_thread_metadata': m0007,
  '0008_relay_members': m0008,
  '0009_channels': m0009,
  '0010_reactions': m0010,
  '0011_moderation': m0011,
  '0012_artifact_heads': m0012,
  '0013_operator_global_tables': m0013,
  '0014_replica_heartbeat': m0014,
  '0015_events_created_at_floor_guard': m0015,
  '0016_event_refs': m0016,
  '0017_agent_owners': m0017,
  '0018_event_tags': m0018,
  '0019_prune_deleted_events': m0019,
  '0020_channel_invites': m0020,
  '0021_bans_notify': m0021,
  '0022_moderation_reports': m0022,
  '0023_channel_group_ids': m0023,
};
