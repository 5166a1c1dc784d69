// Issue 52: a traffic poll's deltas are made durable in one cheap write, then folded into the totals.
// traffic_journal holds what collections read from cores (with reset) and have not added to the totals
// yet: one row per server and collection, its user and inbound deltas as JSON text. The collection
// writes these rows (a handful of inserts whatever the number of users: no users row, no index but the
// key), so the core's reset counters are in the database within a moment of the read; the fold
// (TrafficRepository.fold) adds them to grants, users, inbounds and the usage history and deletes them
// in the same transaction, so each is counted exactly once, across a crash or restart in between too.
// PostgreSQL: the deltas are stored out of line uncompressed (STORAGE EXTERNAL): a row lives for one
// fold, and compressing it (pglz, about 30 ms per MB here) was most of the write's time.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("traffic_journal")
    .addColumn("seq", dialect === "postgres" ? "bigserial" : "integer", (c) =>
      dialect === "postgres" ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn("server_id", t.uuid, (c) => c.notNull())
    // The collection's time: the usage-history buckets and online_at of these bytes.
    .addColumn("collected_at", t.timestamp, (c) => c.notNull())
    // {"users": [[email, uplink, downlink], …], "inbounds": [[tag, uplink, downlink], …]}
    .addColumn("deltas", "text", (c) => c.notNull())
    .execute();
  if (dialect === "postgres") {
    await sql`ALTER TABLE traffic_journal ALTER COLUMN deltas SET STORAGE EXTERNAL`.execute(db);
  }
}
