// Provisioning: the inbounds on each server (made from a template), the users' access grants to them,
// and the queue of core removals that could not reach their core. An inbound row carries everything
// a share link needs (link_params), so a subscription renders from one indexed read.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("server_inbounds")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
    .addColumn("template_id", t.uuid, (c) => c.notNull().references("templates.id"))
    .addColumn("tag", "text", (c) => c.notNull())
    .addColumn("port", "integer", (c) => c.notNull())
    .addColumn("certificate_id", t.uuid, (c) => c.references("certificates.id"))
    .addColumn("variable_values", t.json, (c) => c.notNull())
    .addColumn("secrets_sealed", "text", (c) => c.notNull())
    .addColumn("link_params", t.json, (c) => c.notNull())
    .addColumn("is_active", t.boolean, (c) => c.notNull())
    .addColumn("sync_state", "text", (c) => c.notNull())
    .addColumn("sync_error", "text")
    .addColumn("synced_at", t.timestamp)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .addUniqueConstraint("server_inbounds_server_tag", ["server_id", "tag"])
    .addUniqueConstraint("server_inbounds_server_port", ["server_id", "port"])
    .execute();
  await db.schema
    .createIndex("server_inbounds_template_id")
    .on("server_inbounds")
    .column("template_id")
    .execute();
  await db.schema
    .createIndex("server_inbounds_certificate_id")
    .on("server_inbounds")
    .column("certificate_id")
    .execute();

  await db.schema
    .createTable("user_access")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("server_inbound_id", t.uuid, (c) =>
      c.notNull().references("server_inbounds.id").onDelete("cascade"),
    )
    .addColumn("server_id", t.uuid, (c) => c.notNull())
    .addColumn("proxy_user_id", "text", (c) => c.notNull())
    .addColumn("credential", "text", (c) => c.notNull())
    .addColumn("level", "integer", (c) => c.notNull())
    .addColumn("is_active", t.boolean, (c) => c.notNull())
    .addColumn("sync_state", "text", (c) => c.notNull())
    .addColumn("sync_error", "text")
    .addColumn("uplink_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("downlink_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .addUniqueConstraint("user_access_inbound_user", ["server_inbound_id", "user_id"])
    .addUniqueConstraint("user_access_inbound_proxy_user", ["server_inbound_id", "proxy_user_id"])
    .addUniqueConstraint("user_access_inbound_credential", ["server_inbound_id", "credential"])
    .execute();
  await db.schema.createIndex("user_access_user_id").on("user_access").column("user_id").execute();
  await db.schema.createIndex("user_access_server_id").on("user_access").column("server_id").execute();

  await db.schema
    .createTable("core_removals")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
    .addColumn("inbound_tag", "text", (c) => c.notNull())
    .addColumn("email", "text")
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema.createIndex("core_removals_server_id").on("core_removals").column("server_id").execute();
}
