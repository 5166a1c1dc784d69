// Admins, their tokens and API keys, and users with a substring-search index on each dialect:
// FTS5 trigram on SQLite, pg_trgm GIN on PostgreSQL.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);

  await db.schema
    .createTable("admins")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("username", "text", (c) => c.notNull().unique())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("admin_tokens")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("admin_id", t.uuid, (c) => c.notNull().references("admins.id").onDelete("cascade"))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("name", "text")
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("expires_at", t.timestamp)
    .addColumn("last_used_at", t.timestamp)
    .execute();
  await db.schema.createIndex("admin_tokens_admin_id").on("admin_tokens").column("admin_id").execute();

  await createUsers(db, dialect);
  await createRowCounts(db, dialect);
}

/** count(*) over a million rows is a sequential scan on PostgreSQL; list pages read this instead. */
async function createRowCounts(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await db.schema
    .createTable("row_counts")
    .addColumn("table_name", "text", (c) => c.primaryKey())
    .addColumn("n", "bigint", (c) => c.notNull())
    .execute();
  await sql`INSERT INTO row_counts (table_name, n) VALUES ('users', 0)`.execute(db);
  if (dialect === "sqlite") {
    await sql`CREATE TRIGGER users_count_insert AFTER INSERT ON users BEGIN
      UPDATE row_counts SET n = n + 1 WHERE table_name = 'users'; END`.execute(db);
    await sql`CREATE TRIGGER users_count_delete AFTER DELETE ON users BEGIN
      UPDATE row_counts SET n = n - 1 WHERE table_name = 'users'; END`.execute(db);
    return;
  }
  // Statement-level triggers: one counter update per INSERT/DELETE statement, however many rows.
  await sql`CREATE FUNCTION users_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN UPDATE row_counts SET n = n + (SELECT count(*) FROM inserted) WHERE table_name = 'users'; RETURN NULL; END $$`.execute(
    db,
  );
  await sql`CREATE FUNCTION users_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN UPDATE row_counts SET n = n - (SELECT count(*) FROM deleted) WHERE table_name = 'users'; RETURN NULL; END $$`.execute(
    db,
  );
  await sql`CREATE TRIGGER users_count_insert AFTER INSERT ON users REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION users_count_insert()`.execute(db);
  await sql`CREATE TRIGGER users_count_delete AFTER DELETE ON users REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION users_count_delete()`.execute(db);
}

async function createUsers(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  let users = db.schema.createTable("users");
  // SQLite: an INTEGER PRIMARY KEY gives the FTS index a rowid that VACUUM never renumbers.
  users =
    dialect === "sqlite"
      ? users
          .addColumn("seq", "integer", (c) => c.primaryKey())
          .addColumn("id", t.uuid, (c) => c.notNull().unique())
      : users.addColumn("id", t.uuid, (c) => c.primaryKey());
  await users
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("comment", "text")
    .addColumn("telegram_id", "bigint")
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema.createIndex("users_telegram_id").on("users").column("telegram_id").execute();
  await db.schema.createIndex("users_created_at_id").on("users").columns(["created_at", "id"]).execute();

  if (dialect === "postgres") {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public`.execute(db);
    await sql`CREATE INDEX users_name_trgm ON users USING gin (name public.gin_trgm_ops)`.execute(db);
    return;
  }
  await sql`CREATE VIRTUAL TABLE users_name_fts USING fts5(name, content='users', content_rowid='seq', tokenize='trigram')`.execute(
    db,
  );
  await sql`CREATE TRIGGER users_name_fts_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_name_fts(rowid, name) VALUES (new.seq, new.name); END`.execute(db);
  await sql`CREATE TRIGGER users_name_fts_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_name_fts(users_name_fts, rowid, name) VALUES ('delete', old.seq, old.name); END`.execute(
    db,
  );
  await sql`CREATE TRIGGER users_name_fts_update AFTER UPDATE OF name ON users BEGIN
    INSERT INTO users_name_fts(users_name_fts, rowid, name) VALUES ('delete', old.seq, old.name);
    INSERT INTO users_name_fts(rowid, name) VALUES (new.seq, new.name); END`.execute(db);
}
