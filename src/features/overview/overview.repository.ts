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

  async usersByStatus(): Promise<Map<UserStatus, number>> {
    const rows = await this.db
      .selectFrom("users")
      .select(["status", (eb) => eb.fn.countAll<number | string | bigint>().as("count")])
      .groupBy("status")
      .execute();
    return new Map(rows.map((row) => [row.status, Number(row.count)]));
  }
}
