// Issue 52: a full reconcile reads a server's grants in pages, in their stable order (created_at,
// id), a thousand at a time with the event loop let in between, instead of one statement over the
// whole server (30,000 rows at 100,000 users × 10 servers: half a second of one synchronous SQLite
// statement). This index serves each page by a range scan; without it every page sorted the server.
import type { Kysely } from "kysely";
import type { DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await db.schema
    .createIndex("user_access_server_order")
    .on("user_access")
    .columns(["server_id", "created_at", "id"])
    .execute();
}
