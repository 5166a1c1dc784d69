// What the home page counts, in two queries whatever the fleet's size: the servers with their
// health columns, and the users per status.
import type { Kysely } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import type { UserStatus } from "../../domain/users.ts";

export type OverviewServerRow = {
  id: string;
  name: string;
  status: Database["servers"]["status"];
  connection: "direct" | "node";
  core: "xray" | "v2ray" | null;
  last_seen_at: string | null;
  offline_since: string | null;
  last_error: string | null;
};

export class OverviewRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async servers(): Promise<OverviewServerRow[]> {
    const rows = await this.db
      .selectFrom("servers")
      .select(["id", "name", "status", "connection", "core", "last_seen_at", "offline_since", "last_error"])
      .orderBy("name")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({
      ...row,
      connection: row.connection === "node" ? "node" : "direct",
      last_seen_at: read.optionalTimestamp(row.last_seen_at),
      offline_since: read.optionalTimestamp(row.offline_since),
    }));
  }

  /** `ownerId`: that admin's users only (the users_owner index). */
  async usersByStatus(ownerId?: string): Promise<Map<UserStatus, number>> {
    let query = this.db
      .selectFrom("users")
      .select(["status", (eb) => eb.fn.countAll<number | string | bigint>().as("count")]);
    if (ownerId !== undefined) query = query.where("owner_admin_id", "=", ownerId);
    const rows = await query.groupBy("status").execute();
    return new Map(rows.map((row) => [row.status, Number(row.count)]));
  }

  /** Of these user ids, the ones `ownerId` owns. */
  async ownedAmong(ids: readonly string[], ownerId: string): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db
        .selectFrom("users")
        .select("id")
        .where("owner_admin_id", "=", ownerId)
        .where("id", "in", ids.slice(i, i + 500))
        .execute();
      for (const row of rows) out.add(row.id);
    }
    return out;
  }
}
