// Usage history for charts (issue 12, item 5): traffic per user per server and per server, in hourly
// buckets (kept 7 days) and daily buckets (UTC days, kept 13 months), added to by every traffic
// collection and pruned by jobs/prune-usage.ts.
// - Per-user tables: the primary key (user_id, bucket_start, server_id) is the upsert key, a user's
//   range read and the user cascade; the index (server_id, bucket_start) serves the server cascade
//   and pruning (one range per server). No surrogate id: on SQLite the tables are WITHOUT ROWID, so
//   the primary key is the table and a row is stored once.
// - Per-server tables: (server_id, bucket_start) only; a few rows per server per hour or day.
import type { Kysely } from "kysely";
import { sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  const compact = dialect === "sqlite" ? sql`without rowid` : sql``;
  for (const table of ["user_usage_hourly", "user_usage_daily"]) {
    await db.schema
      .createTable(table)
      .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
      .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
      .addColumn("bucket_start", t.timestamp, (c) => c.notNull())
      .addColumn("uplink_bytes", "bigint", (c) => c.notNull())
      .addColumn("downlink_bytes", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ["user_id", "bucket_start", "server_id"])
      .modifyEnd(compact)
      .execute();
    await db.schema
      .createIndex(`${table}_server_bucket`)
      .on(table)
      .columns(["server_id", "bucket_start"])
      .execute();
  }
  for (const table of ["server_usage_hourly", "server_usage_daily"]) {
    await db.schema
      .createTable(table)
      .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
      .addColumn("bucket_start", t.timestamp, (c) => c.notNull())
      .addColumn("uplink_bytes", "bigint", (c) => c.notNull())
      .addColumn("downlink_bytes", "bigint", (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ["server_id", "bucket_start"])
      .modifyEnd(compact)
      .execute();
  }
}
