// Groups (issue 49): a named set of inbounds that users belong to. A member's access to a group's
// inbound is an ordinary user_access row (the reconciler, links, usage and the lifecycle read only
// grants); user_access.is_own says whether the grant was also given to the user directly, so removing
// the group (or the user from it) never takes away a grant of the user's own. A grant's group sources
// are not stored: they follow from user_groups ⋈ group_inbounds, so they can never disagree.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("groups")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("group_inbounds")
    .addColumn("group_id", t.uuid, (c) => c.notNull().references("groups.id").onDelete("cascade"))
    .addColumn("server_inbound_id", t.uuid, (c) =>
      c.notNull().references("server_inbounds.id").onDelete("cascade"),
    )
    .addPrimaryKeyConstraint("group_inbounds_pk", ["group_id", "server_inbound_id"])
    .execute();
  await db.schema
    .createIndex("group_inbounds_inbound")
    .on("group_inbounds")
    .column("server_inbound_id")
    .execute();
  await db.schema
    .createTable("user_groups")
    .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("group_id", t.uuid, (c) => c.notNull().references("groups.id").onDelete("cascade"))
    .addPrimaryKeyConstraint("user_groups_pk", ["group_id", "user_id"])
    .execute();
  await db.schema.createIndex("user_groups_user").on("user_groups").column("user_id").execute();
  // Every grant before groups was given directly.
  await db.schema
    .alterTable("user_access")
    .addColumn("is_own", t.boolean, (c) => c.notNull().defaultTo(dialect === "postgres" ? sql`true` : 1))
    .execute();
}
