// Devices at subscription fetch time (issue 50 item 1): apps send a hardware id (x-hwid) and what
// they run on when they fetch /sub; a user with a device limit gets their links on at most that many.
// - users.device_limit: devices allowed (null: the subscription settings' default_device_limit;
//   0: unlimited). /sub shows it (a user over the limit gets a placeholder), so changing it adds a
//   subscription_changes row (trigger subscription_changes_user_device_limit, db/triggers.ts).
// - user_devices: one row per (user, hwid): what the app said (app, OS, OS version, model) and when
//   it was first and last seen. Deleted with the user; deleting a row frees a place.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";
import { installTriggers } from "../triggers.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await sql`ALTER TABLE users ADD COLUMN device_limit integer CHECK (device_limit IS NULL OR device_limit >= 0)`.execute(
    db,
  );
  await db.schema
    .createTable("user_devices")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("hwid", "text", (c) => c.notNull())
    .addColumn("app", "text")
    .addColumn("os", "text")
    .addColumn("os_version", "text")
    .addColumn("model", "text")
    .addColumn("first_seen_at", t.timestamp, (c) => c.notNull())
    .addColumn("last_seen_at", t.timestamp, (c) => c.notNull())
    .addUniqueConstraint("user_devices_user_hwid", ["user_id", "hwid"])
    .execute();
  await installTriggers(db, dialect, "0032_devices");
}
