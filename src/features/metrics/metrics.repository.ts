// What /metrics reads from the database at scrape time: server status and reconcile times, grants
// per sync state. Small grouped queries; the service caches their answer between scrapes.
import type { Kysely } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";

export type ServerHealth = {
  id: string;
  name: string;
  status: string;
  core: string | null;
  lastReconciledAt: string | null;
};

export class MetricsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async servers(): Promise<ServerHealth[]> {
    const rows = await this.db
      .selectFrom("servers as s")
      .leftJoin("server_sync as y", "y.server_id", "s.id")
      .select(["s.id", "s.name", "s.status", "s.core", "y.last_reconciled_at"])
      .execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      status: row.status,
      core: row.core,
      lastReconciledAt: read.optionalTimestamp(row.last_reconciled_at),
    }));
  }

  async grantsBySyncState(): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom("user_access")
      .select(["sync_state", (eb) => eb.fn.countAll().as("n")])
      .groupBy("sync_state")
      .execute();
    return new Map(rows.map((row) => [row.sync_state, Number(row.n)]));
  }
}
