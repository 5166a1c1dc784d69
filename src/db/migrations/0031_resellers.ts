// Resellers (issue 49 item 3): admins own the users they create (users.owner_admin_id; users made
// before this migration, by the CLI or by an import are owned by nobody and only admins with the
// `all` scope see them), a permission may be limited to the admin's own users (admins.own_scope: a
// JSON array of the permissions held for own users only), and per-admin quotas over the users they
// own: how many, the sum of their data limits, which groups they may put them in (null: no limit).
// Deleting an admin leaves their users owned by nobody.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .alterTable("admins")
    .addColumn("own_scope", t.json, (c) => c.notNull().defaultTo(sql`'[]'`))
    .execute();
  await db.schema.alterTable("admins").addColumn("max_users", "integer").execute();
  await db.schema.alterTable("admins").addColumn("max_data_bytes", "bigint").execute();
  await db.schema.alterTable("admins").addColumn("allowed_group_ids", t.json).execute();
  await db.schema
    .alterTable("users")
    .addColumn("owner_admin_id", t.uuid, (c) => c.references("admins.id").onDelete("set null"))
    .execute();
  // A reseller's list, counts and quota sums read one range of this index.
  await db.schema
    .createIndex("users_owner")
    .on("users")
    .columns(["owner_admin_id", "created_at", "id"])
    .execute();
}
