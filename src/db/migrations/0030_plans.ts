// Plans (issue 49): what a user gets in one step, at creation or renewal: a data limit and its reset
// period, a duration in days, whether the duration waits on hold for the first traffic, the IP limit,
// how a renewal counts (from the current expiry or from now; usage reset or kept) and groups to join
// (plan_groups). users.next_plan_id: the plan the lifecycle job applies once, when the user is limited
// or expired (features/plans/plans.service.ts); a deleted plan leaves it null.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  const no = dialect === "postgres" ? sql`false` : sql`0`;
  await db.schema
    .createTable("plans")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("data_limit_bytes", "bigint")
    .addColumn("data_limit_reset", "text", (c) => c.notNull().defaultTo("no_reset"))
    .addColumn("duration_days", "integer")
    .addColumn("start_on_hold", t.boolean, (c) => c.notNull().defaultTo(no))
    .addColumn("on_hold_timeout_days", "integer")
    .addColumn("ip_limit", "integer")
    .addColumn("renew_from", "text", (c) => c.notNull().defaultTo("expiry"))
    .addColumn("reset_usage", t.boolean, (c) => c.notNull().defaultTo(no))
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("plan_groups")
    .addColumn("plan_id", t.uuid, (c) => c.notNull().references("plans.id").onDelete("cascade"))
    .addColumn("group_id", t.uuid, (c) => c.notNull().references("groups.id").onDelete("cascade"))
    .addPrimaryKeyConstraint("plan_groups_pk", ["plan_id", "group_id"])
    .execute();
  await db.schema.createIndex("plan_groups_group").on("plan_groups").column("group_id").execute();
  await sql`ALTER TABLE users ADD COLUMN next_plan_id ${sql.raw(t.uuid as string)}
    REFERENCES plans (id) ON DELETE SET NULL`.execute(db);
  // The lifecycle job looks for users with a next plan who are limited or expired: few, found here.
  await sql`CREATE INDEX users_next_plan ON users (next_plan_id) WHERE next_plan_id IS NOT NULL`.execute(db);
}
