// Notifications: the events worth telling someone about, and their deliveries to webhooks and to
// admins' Telegram chats through an outbox — written in the database before any attempt, retried
// with backoff, so they survive a receiver that is down and a restart of the service.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("webhooks")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("secret_sealed", "text", (c) => c.notNull())
    .addColumn("events", t.json, (c) => c.notNull())
    .addColumn("is_active", t.boolean, (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("admin_telegram")
    .addColumn("admin_id", t.uuid, (c) => c.primaryKey().references("admins.id").onDelete("cascade"))
    .addColumn("bot_token_sealed", "text", (c) => c.notNull())
    .addColumn("chat_ids", t.json, (c) => c.notNull())
    .addColumn("language", "text", (c) => c.notNull())
    .addColumn("events", t.json, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("notification_events")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("payload", t.json, (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("notification_deliveries")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("event_id", t.uuid, (c) =>
      c.notNull().references("notification_events.id").onDelete("cascade"),
    )
    .addColumn("target_kind", "text", (c) => c.notNull())
    .addColumn("target_id", t.uuid, (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("next_attempt_at", t.timestamp, (c) => c.notNull())
    .addColumn("locked_until", t.timestamp)
    .addColumn("last_status", "integer")
    .addColumn("last_error", "text")
    .addColumn("delivered_at", t.timestamp)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("notification_deliveries_due")
    .on("notification_deliveries")
    .columns(["status", "next_attempt_at"])
    .execute();
  await db.schema
    .createIndex("notification_deliveries_target")
    .on("notification_deliveries")
    .columns(["target_id", "created_at"])
    .execute();
}
