// db/triggers.ts declares every trigger; this keeps the migrated database true to it. A fresh database
// is migrated (SQLite, or PostgreSQL when DATABASE_URL is set: the suite runs both) and its triggers
// are read back: SQLite keeps each CREATE TRIGGER statement as written (sqlite_master), compared with
// the declaration's text; PostgreSQL keeps a parsed form (pg_trigger, pg_proc), so the declarations
// are installed in a transaction that is rolled back and both are compared as PostgreSQL renders them
// (pg_get_triggerdef, pg_get_functiondef). A second test mutates triggers and expects the check to fail.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { type Kysely, sql } from "kysely";
import { type DatabaseHandle, dropSchema, migrateToLatest, openDatabase } from "./connection.ts";
import { functionSql, TRIGGER_FUNCTIONS, triggersOf } from "./triggers.ts";

type Definitions = Map<string, string>;
type Catalogue = { triggers: Definitions; functions: Definitions; tables: Map<string, string> };

async function readCatalogue(db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<Catalogue> {
  if (dialect === "sqlite") {
    const { rows } = await sql<{ name: string; tbl_name: string; sql: string }>`
      SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'`.execute(db);
    return {
      triggers: new Map(rows.map((r) => [r.name, r.sql.trim()])),
      functions: new Map(),
      tables: new Map(rows.map((r) => [r.name, r.tbl_name])),
    };
  }
  const triggers = await sql<{ name: string; table: string; def: string }>`
    SELECT t.tgname AS name, c.relname AS table, pg_get_triggerdef(t.oid) AS def
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal AND n.nspname = current_schema()`.execute(db);
  const functions = await sql<{ name: string; def: string }>`
    SELECT p.proname AS name, pg_get_functiondef(p.oid) AS def
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE p.prorettype = 'trigger'::regtype AND n.nspname = current_schema()`.execute(db);
  return {
    triggers: new Map(triggers.rows.map((r) => [r.name, r.def])),
    functions: new Map(functions.rows.map((r) => [r.name, r.def])),
    tables: new Map(triggers.rows.map((r) => [r.name, r.table])),
  };
}

class Rollback extends Error {}

/** PostgreSQL: the declarations as PostgreSQL renders them, installed in place of the database's own and rolled back. */
async function declaredOnPostgres(db: Kysely<unknown>, actual: Catalogue): Promise<Catalogue> {
  let declared: Catalogue | undefined;
  await db
    .transaction()
    .execute(async (trx) => {
      for (const [name, table] of actual.tables) {
        await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(trx);
      }
      for (const name of actual.functions.keys()) await sql.raw(`DROP FUNCTION ${name}()`).execute(trx);
      for (const fn of TRIGGER_FUNCTIONS) await sql.raw(functionSql(fn)).execute(trx);
      for (const trigger of triggersOf("postgres").values()) await sql.raw(trigger.create).execute(trx);
      declared = await readCatalogue(trx, "postgres");
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  if (declared === undefined) throw new Error("the declarations were not read");
  return declared;
}

/** Every difference between the triggers db/triggers.ts declares and those of the database. */
export async function triggerDrift(handle: DatabaseHandle): Promise<string[]> {
  const db = handle.db as unknown as Kysely<unknown>;
  const actual = await readCatalogue(db, handle.dialect);
  const declared: Catalogue =
    handle.dialect === "sqlite"
      ? {
          triggers: new Map([...triggersOf("sqlite").values()].map((t) => [t.name, t.create])),
          functions: new Map(),
          tables: new Map([...triggersOf("sqlite").values()].map((t) => [t.name, t.table])),
        }
      : await declaredOnPostgres(db, actual);
  const problems: string[] = [];
  const compare = (kind: string, want: Definitions, got: Definitions) => {
    for (const name of got.keys())
      if (!want.has(name)) problems.push(`${kind} ${name}: in the database, not declared`);
    for (const [name, text] of want) {
      const real = got.get(name);
      if (real === undefined) problems.push(`${kind} ${name}: declared, not in the database`);
      else if (real !== text)
        problems.push(`${kind} ${name}: differs\n  declared: ${text}\n  database: ${real}`);
    }
  };
  compare("trigger", declared.triggers, actual.triggers);
  compare("function", declared.functions, actual.functions);
  for (const [name, table] of declared.tables) {
    const real = actual.tables.get(name);
    if (real !== undefined && real !== table)
      problems.push(`trigger ${name}: on ${real}, declared on ${table}`);
  }
  return problems;
}

async function withMigrated(run: (handle: DatabaseHandle) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-triggers-"));
  const databaseUrl = process.env.DATABASE_URL;
  const schema = databaseUrl === undefined ? undefined : `triggers_${process.pid}_${Date.now()}`;
  const handle = await openDatabase({ dataDir, databaseUrl, ...(schema === undefined ? {} : { schema }) });
  try {
    await migrateToLatest(handle);
    await run(handle);
  } finally {
    if (schema !== undefined) await dropSchema(handle, schema);
    await handle.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

test("the migrated database holds exactly the triggers db/triggers.ts declares", async () => {
  await withMigrated(async (handle) => {
    const actual = await readCatalogue(handle.db as unknown as Kysely<unknown>, handle.dialect);
    assert.ok(actual.triggers.size >= 15, `the database's triggers are read (${actual.triggers.size})`);
    assert.equal(actual.triggers.size, triggersOf(handle.dialect).size);
    assert.deepEqual(await triggerDrift(handle), []);
  });
});

test("the drift check fails on a changed, a missing and an undeclared trigger, and a changed function", async () => {
  await withMigrated(async (handle) => {
    const db = handle.db as unknown as Kysely<unknown>;
    const announce = triggersOf(handle.dialect).get("subscription_changes_user_announce")?.create ?? "";
    const on = handle.dialect === "postgres" ? " ON users" : "";
    // The announce trigger without its WHEN: every update of the column would feed the cache.
    await sql.raw(`DROP TRIGGER subscription_changes_user_announce${on}`).execute(db);
    await sql.raw(announce.replace(/ WHEN .* (BEGIN|EXECUTE)/, " $1")).execute(db);
    await sql.raw(`DROP TRIGGER users_count_delete${on}`).execute(db);
    await sql
      .raw(
        handle.dialect === "sqlite"
          ? "CREATE TRIGGER planted AFTER INSERT ON servers BEGIN SELECT 1; END"
          : "CREATE TRIGGER planted AFTER INSERT ON servers FOR EACH STATEMENT EXECUTE FUNCTION subscription_changes_settings()",
      )
      .execute(db);
    if (handle.dialect === "postgres") {
      // The admission function without the revision bump (migration 0015's version).
      const fn = TRIGGER_FUNCTIONS.find((f) => f.name === "users_admission_changed");
      assert.ok(fn !== undefined);
      await sql
        .raw(functionSql({ ...fn, body: fn.body.replace(", sync_revision = sync_revision + 1", "") }))
        .execute(db);
    }
    const problems = await triggerDrift(handle);
    const heads = problems.map((p) => p.split("\n")[0]);
    const expected = [
      "trigger subscription_changes_user_announce: differs",
      "trigger users_count_delete: declared, not in the database",
      "trigger planted: in the database, not declared",
      ...(handle.dialect === "postgres" ? ["function users_admission_changed: differs"] : []),
    ];
    assert.deepEqual(heads.sort(), expected.sort());
  });
});
