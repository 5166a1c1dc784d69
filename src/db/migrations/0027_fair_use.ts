// Fair use (issue 50): IP limits enforced across the fleet at connection time.
// - users.ip_limit: distinct source addresses allowed within the window (null: the settings' default;
//   0: unlimited). users.fair_use_blocked_until: set while the fair-use job blocks the user; a blocked
//   user is not admitted to cores (the reconciler removes their credentials everywhere, the agents cut
//   their connections), null again when the block ends.
// - fair_use_settings: one row (id 1) of JSON, written by /api/fair-use/settings.
// - fair_use_state: the decision's state per user who was ever warned or blocked (warning, strikes,
//   last release, from when addresses count).
// - fair_use_blocks: every block, with its reason (count, limit, addresses) and how it ended.
// Trigger (declared in db/triggers.ts): fair_use_blocked_until going from null to a time or back marks
// the user's active grants 'pending', as a status change across "admitted" does.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";
import { installTriggers } from "../triggers.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await sql`ALTER TABLE users ADD COLUMN ip_limit integer CHECK (ip_limit IS NULL OR ip_limit >= 0)`.execute(
    db,
  );
  await sql`ALTER TABLE users ADD COLUMN fair_use_blocked_until ${sql.raw(t.timestamp as string)}`.execute(
    db,
  );
  await db.schema
    .createTable("fair_use_settings")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("fair_use_state")
    .addColumn("user_id", t.uuid, (c) => c.primaryKey().references("users.id").onDelete("cascade"))
    .addColumn("warned_at", t.timestamp)
    .addColumn("strikes", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("last_release_at", t.timestamp)
    .addColumn("counted_from", t.timestamp)
    .execute();
  await db.schema
    .createTable("fair_use_blocks")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("started_at", t.timestamp, (c) => c.notNull())
    .addColumn("until", t.timestamp, (c) => c.notNull())
    .addColumn("ended_at", t.timestamp)
    .addColumn("end_reason", "text")
    .addColumn("strike", "integer", (c) => c.notNull())
    .addColumn("address_count", "integer", (c) => c.notNull())
    .addColumn("ip_limit", "integer", (c) => c.notNull())
    .addColumn("addresses", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("fair_use_blocks_user")
    .on("fair_use_blocks")
    .columns(["user_id", "started_at"])
    .execute();
  // users_fair_use_block_changed (db/triggers.ts): on PostgreSQL it runs users_admission_changed()
  // (migration 0015; re-created by 0029 with the revision bump).
  await installTriggers(db, dialect, "0027_fair_use");
}
