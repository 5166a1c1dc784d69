// Templates: Xray-style inbound JSON with placeholders. config, variables and supported_cores are
// JSON text on both dialects; client_flow is the VLESS flow given to every user of its inbounds.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("templates")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("config", t.json, (c) => c.notNull())
    .addColumn("variables", t.json, (c) => c.notNull())
    .addColumn("client_flow", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("supported_cores", t.json, (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
}
