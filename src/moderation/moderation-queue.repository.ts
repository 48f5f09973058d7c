/**
 * The moderator queue (NIP-56 reports, kind 1984) and the moderation audit trail
 * (`moderation_reports`, `moderation_actions`, migration 0022). Writes take the transaction of
 * the command they belong to, so a decision and its audit row commit together. The listings serve
 * `GET /moderation/reports` and `GET /moderation/audit` and read the writer: the queue a moderator
 * acts on must show the report it was just told about.
 */
import { Injectable } from '@nestjs/common';
import { Kysely } from 'kysely';
import { DatabaseService, DB, ReportStatus, ReportTargetKind } from '@buzz-relay/read-path';
import type { WriterOperation } from '@buzz-relay/read-path';

export interface NewReport {
  readonly reportEventId: string;
  readonly reporterPubkey: string;
  readonly targetKind: ReportTargetKind;
  readonly targetPubkey: string;
  readonly targetEventId: string | null;
  readonly channelId: string | null;
  readonly reportType: string;
  readonly note: string | null;
}

export interface NewAction {
  /** Null for the operator CLI. */
  readonly actorPubkey: string | null;
  readonly action: string;
  readonly targetPubkey?: string | null;
  readonly targetEventId?: string | null;
  readonly reportId?: string | null;
  readonly commandEventId?: string | null;
  readonly reason?: string | null;
  readonly expiresAt?: Date | null;
}

export interface OpenReport {
  readonly id: string;
  readonly status: ReportStatus;
  readonly targetPubkey: string;
  readonly targetEventId: string | null;
}

/** Most rows one listing returns. */
export const LISTING_MAX = 500;

@Injectable()
export class ModerationQueueRepository {
  constructor(private readonly database: DatabaseService) {}

  /** One labelled writer checkout (database.md §6.2): a command's transaction, or a lookup outside one. */
  withWriter<T>(operation: WriterOperation, work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    return this.database.withWriter(operation, work);
  }

  /** Queues a report; false when this report event was queued already (a re-send). */
  async insertReport(communityId: string, r: NewReport): Promise<boolean> {
    const row = await this.withWriter('event_write', (db) =>
      db
      .insertInto('moderation_reports')
      .values({
        community_id: communityId,
        report_event_id: r.reportEventId,
        reporter_pubkey: r.reporterPubkey,
        target_kind: r.targetKind,
        target_pubkey: r.targetPubkey,
        target_event_id: r.targetEventId,
        channel_id: r.channelId,
        report_type: r.reportType,
        note: r.note,
      })
      .onConflict((oc) => oc.columns(['community_id', 'report_event_id']).doNothing())
      .returning('id')
      .executeTakeFirst(),
    );
    return row !== undefined;
  }

  /** The report filed by event `reportEventId`, locked until the transaction ends. */
  async lockReport(tx: Kysely<DB>, communityId: string, reportEventId: string): Promise<OpenReport | undefined> {
    const row = await tx
      .selectFrom('moderation_reports')
      .select(['id', 'status', 'target_pubkey', 'target_event_id'])
      .where('community_id', '=', communityId)
      .where('report_event_id', '=', reportEventId)
      .forUpdate()
      .executeTakeFirst();
    return row && { id: row.id, status: row.status, targetPubkey: row.target_pubkey, targetEventId: row.target_event_id };
  }

  async closeReport(tx: Kysely<DB>, reportId: string, status: Exclude<ReportStatus, 'open'>, action: string, by: string): Promise<void> {
    await tx
      .updateTable('moderation_reports')
      .set({ status, resolution_action: action, resolved_by: by, resolved_at: new Date() })
      .where('id', '=', reportId)
      .where('status', '=', 'open')
      .execute();
  }

  async recordAction(tx: Kysely<DB>, communityId: string, a: NewAction): Promise<void> {
    await tx
      .insertInto('moderation_actions')
      .values({
        community_id: communityId,
        actor_pubkey: a.actorPubkey,
        action: a.action,
        target_pubkey: a.targetPubkey ?? null,
        target_event_id: a.targetEventId ?? null,
        report_id: a.reportId ?? null,
        command_event_id: a.commandEventId ?? null,
        reason: a.reason ?? null,
        expires_at: a.expiresAt ?? null,
      })
      .execute();
  }

  /** The community's reports, newest first; only those of `status` when given. */
  async reports(communityId: string, status: ReportStatus | undefined, limit: number) {
    return this.withWriter('authorization', (db) => {
      let q = db
        .selectFrom('moderation_reports')
        .select(['id', 'report_event_id', 'reporter_pubkey', 'target_kind', 'target_pubkey', 'target_event_id', 'channel_id', 'report_type', 'note', 'status', 'resolution_action', 'resolved_by', 'resolved_at', 'created_at'])
        .where('community_id', '=', communityId);
      if (status !== undefined) q = q.where('status', '=', status);
      return q.orderBy('created_at', 'desc').orderBy('id').limit(Math.min(limit, LISTING_MAX)).execute();
    });
  }

  /** The community's moderation decisions, newest first. */
  async actions(communityId: string, limit: number) {
    return this.withWriter('authorization', (db) =>
      db
        .selectFrom('moderation_actions')
        .select(['id', 'actor_pubkey', 'action', 'target_pubkey', 'target_event_id', 'report_id', 'command_event_id', 'reason', 'expires_at', 'created_at'])
        .where('community_id', '=', communityId)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .limit(Math.min(limit, LISTING_MAX))
        .execute(),
    );
  }
}
