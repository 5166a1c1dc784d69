// Convergence: what Portcullis knows about each core process (so a restart, or a Portcullis restart,
// is recognised across processes and instances), the per-server lease that lets exactly one of
// several instances reconcile and collect traffic for a server, per-inbound traffic totals, and an
// index that finds a server's grants that have not reached its core yet without a scan.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("server_sync")
    .addColumn("server_id", t.uuid, (c) => c.primaryKey().references("servers.id").onDelete("cascade"))
    .addColumn("applied_core_started_at", t.timestamp)
    .addColumn("full_sync_requested_at", t.timestamp)
    .addColumn("last_reconciled_at", t.timestamp)
    .addColumn("last_reconcile_error", "text")
    .execute();
  await db.schema
    .createTable("server_leases")
    .addColumn("server_id", t.uuid, (c) => c.primaryKey().references("servers.id").onDelete("cascade"))
    .addColumn("holder", "text", (c) => c.notNull())
    .addColumn("expires_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .alterTable("server_inbounds")
    .addColumn("uplink_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("server_inbounds")
    .addColumn("downlink_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex("user_access_server_sync_state")
    .on("user_access")
    .columns(["server_id", "sync_state"])
    .execute();
  await db.schema
    .createIndex("user_access_server_proxy_user")
    .on("user_access")
    .columns(["server_id", "proxy_user_id"])
    .execute();
}
