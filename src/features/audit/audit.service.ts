// Who changed what, when, from where, with what outcome. An API write is recorded in two steps
// around the handler (app.ts): `begin` before it runs — so no change is ever made without an entry —
// and `finish` with the status, the created id and the body's field names (never their values).
// A login is recorded by the auth service; the CLI records its commands with `record`.
import { randomUUID } from "node:crypto";
import type { AuditEntry, AuditFilter, AuditRepository } from "./audit.repository.ts";

export type Actor = {
  kind: "session" | "api_key" | "cli" | "anonymous" | "system";
  id: string | null;
  name: string;
  tokenId: string | null;
};

export type AuditStart = {
  actor: Actor;
  action: string;
  method: string | null;
  route: string | null;
  targets: Record<string, string>;
  ip: string | null;
  requestId: string | null;
};

export type AuditView = {
  id: string;
  at: string;
  actor: { kind: string; id: string | null; name: string; token_id: string | null };
  action: string;
  method: string | null;
  route: string | null;
  targets: Record<string, string>;
  fields: string[] | null;
  ip: string | null;
  request_id: string | null;
  outcome: AuditEntry["outcome"];
  status: number | null;
  finished_at: string | null;
};

/** Entries older than this many days are deleted by the retention job (PORTCULLIS_AUDIT_RETENTION_DAYS). */
export const DEFAULT_RETENTION_DAYS = 365;
/** A `pending` entry older than this belongs to a call that never finished (the process stopped). */
const STALE_PENDING_MS = 60 * 60_000;

export class AuditService {
  constructor(
    private readonly repo: AuditRepository,
    private readonly retentionDays: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Before a call runs: an entry with outcome `pending`; returns its id for `finish`. */
  async begin(start: AuditStart): Promise<string> {
    const id = randomUUID();
    await this.repo.insert({
      ...entryOf(start, this.now()),
      id,
      outcome: "pending",
      status: null,
      finishedAt: null,
    });
    return id;
  }

  async finish(
    id: string,
    status: number,
    targets: Record<string, string>,
    fields: string[] | null,
  ): Promise<void> {
    const outcome = status < 400 ? "succeeded" : "failed";
    await this.repo.finish(id, { outcome, status, targets, fields, at: this.now().toISOString() });
  }

  /** A call recorded in one step, after it ran (a login, a CLI command). */
  async record(start: AuditStart, status: number, fields: string[] | null = null): Promise<void> {
    const now = this.now();
    await this.repo.insert({
      ...entryOf(start, now),
      id: randomUUID(),
      fields,
      outcome: status < 400 ? "succeeded" : "failed",
      status,
      finishedAt: now.toISOString(),
    });
  }

  async list(filter: AuditFilter, page: number, perPage: number) {
    const { items, total } = await this.repo.list(filter, page, perPage);
    return { items: items.map(toView), total, page, per_page: perPage };
  }

  async prune(): Promise<{ deleted: number; interrupted: number }> {
    const now = this.now().getTime();
    return this.repo.prune(
      new Date(now - this.retentionDays * 86_400_000).toISOString(),
      new Date(now - STALE_PENDING_MS).toISOString(),
    );
  }
}

function entryOf(start: AuditStart, now: Date): Omit<AuditEntry, "id" | "outcome" | "status" | "finishedAt"> {
  return {
    at: now.toISOString(),
    actorKind: start.actor.kind,
    actorId: start.actor.id,
    actorName: start.actor.name,
    tokenId: start.actor.tokenId,
    action: start.action,
    method: start.method,
    route: start.route,
    targets: start.targets,
    fields: null,
    ip: start.ip,
    requestId: start.requestId,
  };
}

function toView(entry: AuditEntry): AuditView {
  return {
    id: entry.id,
    at: entry.at,
    actor: { kind: entry.actorKind, id: entry.actorId, name: entry.actorName, token_id: entry.tokenId },
    action: entry.action,
    method: entry.method,
    route: entry.route,
    targets: entry.targets,
    fields: entry.fields,
    ip: entry.ip,
    request_id: entry.requestId,
    outcome: entry.outcome,
    status: entry.status,
    finished_at: entry.finishedAt,
  };
}
