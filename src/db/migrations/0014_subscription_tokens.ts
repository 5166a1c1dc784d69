// Revocable subscription URLs and operator settings for subscriptions (issue 13).
// - users.sub_token: 32 lowercase hex characters (128 random bits; PostgreSQL's from gen_random_uuid,
//   122 bits), unique, filled for existing users and for every insert that gives none. The API
//   draws its own (features/users). Rotating it is a change of the user's subscription: a trigger
//   adds a subscription_changes row, so every instance drops the record with the old token.
// - subscription_settings: one row (id 1) of JSON, written by /api/subscription-settings. Every write
//   adds a subscription_changes row with neither user nor inbound: "the settings changed", which
//   each instance answers by reading them again (features/subscriptions).
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  if (dialect === "sqlite") {
    await sql`ALTER TABLE users ADD COLUMN sub_token text`.execute(db);
    await sql`UPDATE users SET sub_token = lower(hex(randomblob(16)))`.execute(db);
    await sql`CREATE TRIGGER users_sub_token_default AFTER INSERT ON users WHEN NEW.sub_token IS NULL
      BEGIN UPDATE users SET sub_token = lower(hex(randomblob(16))) WHERE id = NEW.id; END`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_user_token AFTER UPDATE OF sub_token ON users
      WHEN OLD.sub_token IS NOT NULL AND OLD.sub_token IS NOT NEW.sub_token
      BEGIN INSERT INTO subscription_changes (user_id) VALUES (NEW.id); END`.execute(db);
  } else {
    await sql`ALTER TABLE users ADD COLUMN sub_token text NOT NULL
      DEFAULT replace(gen_random_uuid()::text, '-', '')`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_user_token AFTER UPDATE OF sub_token ON users
      FOR EACH ROW WHEN (OLD.sub_token IS DISTINCT FROM NEW.sub_token)
      EXECUTE FUNCTION subscription_changes_row()`.execute(db);
  }
  await db.schema.createIndex("users_sub_token").unique().on("users").column("sub_token").execute();

  await db.schema
    .createTable("subscription_settings")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  if (dialect === "sqlite") {
    for (const event of ["INSERT", "UPDATE"]) {
      await sql`CREATE TRIGGER ${sql.raw(`subscription_changes_settings_${event.toLowerCase()}`)}
        AFTER ${sql.raw(event)} ON subscription_settings
        BEGIN INSERT INTO subscription_changes (user_id, inbound_id) VALUES (NULL, NULL); END`.execute(db);
    }
  } else {
    await sql`CREATE FUNCTION subscription_changes_settings() RETURNS trigger LANGUAGE plpgsql
      SET search_path FROM CURRENT
      AS $$ BEGIN INSERT INTO subscription_changes (user_id, inbound_id) VALUES (NULL, NULL); RETURN NULL; END $$`.execute(
      db,
    );
    await sql`CREATE TRIGGER subscription_changes_settings AFTER INSERT OR UPDATE ON subscription_settings
      FOR EACH STATEMENT EXECUTE FUNCTION subscription_changes_settings()`.execute(db);
  }
}
