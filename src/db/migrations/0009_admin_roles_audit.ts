// Several admins: a role each (existing admins become owners), disabling, TOTP second factor with
// one-time recovery codes, API keys narrowed to a role, and the audit log of every state-changing
// call (who, what, when, from where, outcome).
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .alterTable("admins")
    .addColumn("role", "text", (c) => c.notNull().defaultTo("owner"))
    .execute();
  await db.schema
    .alterTable("admins")
    .addColumn("is_disabled", t.boolean, (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema.alterTable("admins").addColumn("totp_secret_sealed", "text").execute();
  await db.schema.alterTable("admins").addColumn("totp_enabled_at", t.timestamp).execute();
  await db.schema.alterTable("admins").addColumn("totp_last_step", "bigint").execute();
  await db.schema.alterTable("admin_tokens").addColumn("role", "text").execute();

  await db.schema
    .createTable("admin_recovery_codes")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("admin_id", t.uuid, (c) => c.notNull().references("admins.id").onDelete("cascade"))
    .addColumn("code_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("used_at", t.timestamp)
    .execute();
  await db.schema
    .createIndex("admin_recovery_codes_admin")
    .on("admin_recovery_codes")
    .column("admin_id")
    .execute();

  await db.schema
    .createTable("audit_log")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("at", t.timestamp, (c) => c.notNull())
    .addColumn("actor_kind", "text", (c) => c.notNull())
    .addColumn("actor_id", t.uuid)
    .addColumn("actor_name", "text", (c) => c.notNull())
    .addColumn("token_id", t.uuid)
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("method", "text")
    .addColumn("route", "text")
    .addColumn("targets", t.json, (c) => c.notNull())
    .addColumn("fields", t.json)
    .addColumn("ip", "text")
    .addColumn("request_id", "text")
    .addColumn("outcome", "text", (c) => c.notNull())
    .addColumn("status", "integer")
    .addColumn("finished_at", t.timestamp)
    .execute();
  await db.schema.createIndex("audit_log_at").on("audit_log").columns(["at", "id"]).execute();
  await db.schema.createIndex("audit_log_actor").on("audit_log").columns(["actor_id", "at"]).execute();
  await db.schema.createIndex("audit_log_action").on("audit_log").columns(["action", "at"]).execute();
}
