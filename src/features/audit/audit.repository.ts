// The audit log in SQL: an entry is inserted before a call runs (outcome `pending`) and completed
// after, so no change is ever made without its entry; entries of calls that never completed (the
// process died) are marked `interrupted` by the retention job.
import type { Kysely, Selectable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { AuditLogTable, Database } from "../../db/types.ts";

export type AuditEntry = {
  id: string;
  at: string;
  actorKind: string;
  actorId: string | null;
  actorName: string;
  tokenId: string | null;
  action: string;
  method: string | null;
  route: string | null;
  targets: Record<string, string>;
  fields: string[] | null;
  ip: string | null;
  requestId: string | null;
  outcome: "pending" | "succeeded" | "failed" | "interrupted";
  status: number | null;
  finishedAt: string | null;
};

export type AuditFilter = {
  actorId?: string | undefined;
  action?: string | undefined;
  target?: string | undefined;
  outcome?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
};

export class AuditRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(entry: AuditEntry): Promise<void> {
    await this.db
      .insertInto("audit_log")
      .values({
        id: entry.id,
        at: entry.at,
        actor_kind: entry.actorKind,
        actor_id: entry.actorId,
        actor_name: entry.actorName,
        token_id: entry.tokenId,
        action: entry.action,
        method: entry.method,
        route: entry.route,
        targets: JSON.stringify(entry.targets),
        fields: entry.fields === null ? null : JSON.stringify(entry.fields),
        ip: entry.ip,
        request_id: entry.requestId,
        outcome: entry.outcome,
        status: entry.status,
        finished_at: entry.finishedAt,
      })
      .execute();
  }

  async finish(
    id: string,
    done: {
      outcome: AuditEntry["outcome"];
      status: number;
      targets: Record<string, string>;
      fields: string[] | null;
      at: string;
    },
  ): Promise<void> {
    await this.db
      .updateTable("audit_log")
      .set({
        outcome: done.outcome,
        status: done.status,
        targets: JSON.stringify(done.targets),
        fields: done.fields === null ? null : JSON.stringify(done.fields),
        finished_at: done.at,
      })
      .where("id", "=", id)
      .execute();
  }

  async list(
    filter: AuditFilter,
    page: number,
    perPage: number,
  ): Promise<{ items: AuditEntry[]; total: number }> {
    let query = this.db.selectFrom("audit_log");
    if (filter.actorId !== undefined) query = query.where("actor_id", "=", filter.actorId);
    if (filter.action !== undefined) query = query.where("action", "=", filter.action);
    if (filter.outcome !== undefined) query = query.where("outcome", "=", filter.outcome);
    if (filter.from !== undefined) query = query.where("at", ">=", filter.from);
    if (filter.to !== undefined) query = query.where("at", "<", filter.to);
    // Targets are a small JSON object of ids; the id is a validated uuid, so no LIKE escaping is needed.
    if (filter.target !== undefined) query = query.where("targets", "like", `%"${filter.target}"%`);
    const rows = await query
      .selectAll()
      .orderBy("at", "desc")
      .orderBy("id", "desc")
      .limit(perPage)
      .offset((page - 1) * perPage)
      .execute();
    const count = await query.select((eb) => eb.fn.countAll().as("n")).executeTakeFirst();
    return { items: rows.map(toEntry), total: Number(count?.n ?? 0) };
  }

  /** Retention: entries before `before` go; `pending` ones older than `staleBefore` become `interrupted`. */
  async prune(before: string, staleBefore: string): Promise<{ deleted: number; interrupted: number }> {
    const deleted = await this.db.deleteFrom("audit_log").where("at", "<", before).executeTakeFirst();
    const interrupted = await this.db
      .updateTable("audit_log")
      .set({ outcome: "interrupted" })
      .where("outcome", "=", "pending")
      .where("at", "<", staleBefore)
      .executeTakeFirst();
    return { deleted: Number(deleted.numDeletedRows), interrupted: Number(interrupted.numUpdatedRows) };
  }
}

function toEntry(row: Selectable<AuditLogTable>): AuditEntry {
  return {
    id: row.id,
    at: read.timestamp(row.at),
    actorKind: row.actor_kind,
    actorId: row.actor_id,
    actorName: row.actor_name,
    tokenId: row.token_id,
    action: row.action,
    method: row.method,
    route: row.route,
    targets: JSON.parse(row.targets) as Record<string, string>,
    fields: row.fields === null ? null : (JSON.parse(row.fields) as string[]),
    ip: row.ip,
    requestId: row.request_id,
    outcome: row.outcome as AuditEntry["outcome"],
    status: row.status,
    finishedAt: read.optionalTimestamp(row.finished_at),
  };
}
