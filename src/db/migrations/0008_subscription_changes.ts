// The change feed of what GET /sub shows. Triggers add a row in the same transaction as every write
// that changes a subscription (a grant added, removed or changed; a user renamed or deleted; an
// inbound's link parameters or is_active changed, or the inbound deleted), whichever code path or
// process wrote it, so each instance's subscription cache can drop exactly what changed. Traffic
// counters and sync bookkeeping do not fire them.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect === "sqlite") await createForSqlite(db);
  else await createForPostgres(db);
}

/** One writer at a time: seq order is commit order, so a reader only needs the last seq it read. */
async function createForSqlite(db: Kysely<unknown>): Promise<void> {
  const t = columnTypes("sqlite");
  await db.schema
    .createTable("subscription_changes")
    .addColumn("seq", "integer", (c) => c.primaryKey().autoIncrement())
    .addColumn("txid", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("user_id", t.uuid)
    .addColumn("inbound_id", t.uuid)
    .addColumn("created_at", t.timestamp, (c) =>
      c.notNull().defaultTo(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
    )
    .execute();
  const user = (ref: string) => sql.raw(`INSERT INTO subscription_changes (user_id) VALUES (${ref});`);
  const inbound = (ref: string) => sql.raw(`INSERT INTO subscription_changes (inbound_id) VALUES (${ref});`);
  await sql`CREATE TRIGGER subscription_changes_user_renamed AFTER UPDATE OF name ON users
    WHEN OLD.name IS NOT NEW.name BEGIN ${user("NEW.id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_user_deleted AFTER DELETE ON users
    BEGIN ${user("OLD.id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_grant_added AFTER INSERT ON user_access
    BEGIN ${user("NEW.user_id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_grant_removed AFTER DELETE ON user_access
    BEGIN ${user("OLD.user_id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_grant_changed
    AFTER UPDATE OF user_id, server_inbound_id, credential, is_active ON user_access
    WHEN OLD.user_id IS NOT NEW.user_id OR OLD.server_inbound_id IS NOT NEW.server_inbound_id
      OR OLD.credential IS NOT NEW.credential OR OLD.is_active IS NOT NEW.is_active
    BEGIN ${user("OLD.user_id")} ${user("NEW.user_id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_inbound_changed
    AFTER UPDATE OF link_params, is_active ON server_inbounds
    WHEN OLD.link_params IS NOT NEW.link_params OR OLD.is_active IS NOT NEW.is_active
    BEGIN ${inbound("NEW.id")} END`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_inbound_deleted AFTER DELETE ON server_inbounds
    BEGIN ${inbound("OLD.id")} END`.execute(db);
}

/**
 * Sequence numbers are drawn before commit, so a later reader can see seq 11 before seq 10 commits.
 * Each row carries its transaction id instead: everything below a snapshot's xmin is final, which is
 * what a reader's cursor follows (features/subscriptions/change-feed.ts). Inserts and deletes fire
 * once per statement (a bulk grant is one INSERT … SELECT); updates per row, and only when a column
 * that a subscription shows changed. search_path is pinned so any session's writes find the table.
 */
async function createForPostgres(db: Kysely<unknown>): Promise<void> {
  const t = columnTypes("postgres");
  await db.schema
    .createTable("subscription_changes")
    .addColumn("seq", "bigserial", (c) => c.primaryKey())
    .addColumn("txid", "bigint", (c) => c.notNull().defaultTo(sql`(pg_current_xact_id()::text)::bigint`))
    .addColumn("user_id", t.uuid)
    .addColumn("inbound_id", t.uuid)
    .addColumn("created_at", t.timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("subscription_changes_txid")
    .on("subscription_changes")
    .column("txid")
    .execute();
  const fn = (name: string, body: string) =>
    sql`CREATE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
      AS $$ BEGIN ${sql.raw(body)} RETURN NULL; END $$`.execute(db);
  await fn(
    "subscription_changes_users",
    "INSERT INTO subscription_changes (user_id) SELECT user_id FROM changed;",
  );
  await fn(
    "subscription_changes_user_ids",
    "INSERT INTO subscription_changes (user_id) SELECT id FROM changed;",
  );
  await fn(
    "subscription_changes_inbounds",
    "INSERT INTO subscription_changes (inbound_id) SELECT id FROM changed;",
  );
  await fn(
    "subscription_changes_row",
    `IF TG_TABLE_NAME = 'server_inbounds' THEN
       INSERT INTO subscription_changes (inbound_id) VALUES (NEW.id);
     ELSIF TG_TABLE_NAME = 'users' THEN
       INSERT INTO subscription_changes (user_id) VALUES (NEW.id);
     ELSE
       INSERT INTO subscription_changes (user_id) VALUES (OLD.user_id), (NEW.user_id);
     END IF;`,
  );
  const statement = (name: string, event: string, table: string, rows: "NEW" | "OLD", fnName: string) =>
    sql`CREATE TRIGGER ${sql.raw(name)} AFTER ${sql.raw(event)} ON ${sql.raw(table)}
      REFERENCING ${sql.raw(rows)} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION ${sql.raw(fnName)}()`.execute(
      db,
    );
  await statement(
    "subscription_changes_user_deleted",
    "DELETE",
    "users",
    "OLD",
    "subscription_changes_user_ids",
  );
  await statement(
    "subscription_changes_grant_added",
    "INSERT",
    "user_access",
    "NEW",
    "subscription_changes_users",
  );
  await statement(
    "subscription_changes_grant_removed",
    "DELETE",
    "user_access",
    "OLD",
    "subscription_changes_users",
  );
  await statement(
    "subscription_changes_inbound_deleted",
    "DELETE",
    "server_inbounds",
    "OLD",
    "subscription_changes_inbounds",
  );
  const row = (name: string, columns: string, table: string, when: string) =>
    sql`CREATE TRIGGER ${sql.raw(name)} AFTER UPDATE OF ${sql.raw(columns)} ON ${sql.raw(table)}
      FOR EACH ROW WHEN (${sql.raw(when)}) EXECUTE FUNCTION subscription_changes_row()`.execute(db);
  await row("subscription_changes_user_renamed", "name", "users", "OLD.name IS DISTINCT FROM NEW.name");
  await row(
    "subscription_changes_grant_changed",
    "user_id, server_inbound_id, credential, is_active",
    "user_access",
    `OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.server_inbound_id IS DISTINCT FROM NEW.server_inbound_id
      OR OLD.credential IS DISTINCT FROM NEW.credential OR OLD.is_active IS DISTINCT FROM NEW.is_active`,
  );
  await row(
    "subscription_changes_inbound_changed",
    "link_params, is_active",
    "server_inbounds",
    "OLD.link_params IS DISTINCT FROM NEW.link_params OR OLD.is_active IS DISTINCT FROM NEW.is_active",
  );
}
