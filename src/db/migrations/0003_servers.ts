// Servers: remote proxy cores reached over gRPC. api_credentials is stored sealed (AES-GCM); the
// detected core flavor and version are remembered on the record.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("servers")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("hostname", "text", (c) => c.notNull())
    .addColumn("grpc_hostname", "text", (c) => c.notNull())
    .addColumn("grpc_port", "integer", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("default_certificate_id", t.uuid)
    .addColumn("api_credentials_sealed", "text")
    .addColumn("core", "text")
    .addColumn("core_version", "text")
    .addColumn("last_error", "text")
    .addColumn("last_seen_at", t.timestamp)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("servers_default_certificate_id")
    .on("servers")
    .column("default_certificate_id")
    .execute();
}
