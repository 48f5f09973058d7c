import { Kysely, sql } from 'kysely';

/**
 * The moderator queue and its audit trail (relay.md §1.3, §5.2 step 7, §3.9), and the workspace
 * profile of kind 9033 (§5.2 step 11):
 * - `moderation_reports`: one row per NIP-56 report (kind 1984), keyed by the report's event id.
 *   A report is never stored as an event; moderators read the queue (`GET /moderation/reports`)
 *   and close a report with kind 9044, which moves `status` from `open` to `resolved` or
 *   `dismissed` once.
 * - `moderation_actions`: one row per moderation decision (9040–9044 and the operator CLI's ban
 *   and unban), written in the transaction of the change it records; `actor_pubkey` is null for
 *   the operator CLI.
 * - `communities.icon`: the workspace icon set by 9033 (NIP-11 `icon`); the other 9033 setting,
 *   `thread_replies_in_channel`, is a column already.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE communities ADD COLUMN icon text`.execute(db);

  await sql`
    CREATE TABLE moderation_reports (
      id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
      community_id       uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      report_event_id    text        NOT NULL,
      reporter_pubkey    text        NOT NULL,
      target_kind        text        NOT NULL,
      target_pubkey      text        NOT NULL,
      target_event_id    text,
      channel_id         uuid,
      report_type        text        NOT NULL,
      note               text,
      status             text        NOT NULL DEFAULT 'open',
      resolution_action  text,
      resolved_by        text,
      resolved_at        timestamptz,
      created_at         timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT moderation_reports_event_key UNIQUE (community_id, report_event_id),
      CONSTRAINT moderation_reports_target_kind CHECK (target_kind IN ('event', 'pubkey')),
      CONSTRAINT moderation_reports_status CHECK (status IN ('open', 'resolved', 'dismissed')),
      CONSTRAINT moderation_reports_hex CHECK (
        report_event_id ~ '^[0-9a-f]{64}$' AND reporter_pubkey ~ '^[0-9a-f]{64}$'
        AND target_pubkey ~ '^[0-9a-f]{64}$'
        AND (target_event_id IS NULL OR target_event_id ~ '^[0-9a-f]{64}$')
      )
    )
  `.execute(db);
  // The queue as moderators page it: a community's reports of one status, newest first.
  await sql`
    CREATE INDEX idx_moderation_reports_queue
      ON moderation_reports (community_id, status, created_at DESC, id)
  `.execute(db);

  await sql`
    CREATE TABLE moderation_actions (
      id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
      community_id     uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      actor_pubkey     text,
      action           text        NOT NULL,
      target_pubkey    text,
      target_event_id  text,
      report_id        uuid        REFERENCES moderation_reports (id) ON DELETE SET NULL,
      command_event_id text,
      reason           text,
      expires_at       timestamptz,
      created_at       timestamptz NOT NULL DEFAULT now()
    )
  `.execute(db);
  await sql`
    CREATE INDEX idx_moderation_actions_community_created
      ON moderation_actions (community_id, created_at DESC, id)
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE moderation_actions`.execute(db);
  await sql`DROP TABLE moderation_reports`.execute(db);
  await sql`ALTER TABLE communities DROP COLUMN icon`.execute(db);
}
