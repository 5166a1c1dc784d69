// What an import from another panel (issue 51, features/import) leaves behind for the old
// subscription URLs to keep working:
// - import_secrets: the peer's signing secret (Marzban/PasarGuard's jwt.secret_key), secret-box sealed;
// - import_links: which Portcullis user an old URL names: Marzban's username (lower case) or 3x-ui's
//   subId, with the moment before which Marzban tokens are void (users.sub_revoked_at).
// Both are keyed on what the peer had, so importing again writes nothing new.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("import_secrets")
    .addColumn("source", "text", (c) => c.primaryKey())
    .addColumn("secret_sealed", "text", (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("import_links")
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("user_id", t.uuid, (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("revoked_at", t.timestamp)
    .addPrimaryKeyConstraint("import_links_pk", ["source", "key"])
    .execute();
  await db.schema.createIndex("import_links_user").on("import_links").column("user_id").execute();
}
