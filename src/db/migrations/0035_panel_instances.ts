// Several instances on one PostgreSQL database share the servers out instead of one holding them all:
// each live instance announces itself here (a heartbeat renewed every reconcile interval, expiring
// like a lease), and every instance works out the same split of the servers over the live names
// (features/sync/shares.ts). SQLite (one process) writes nothing here.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("panel_instances")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("expires_at", t.timestamp, (c) => c.notNull())
    .execute();
}
