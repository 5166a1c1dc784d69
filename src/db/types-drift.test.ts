// db/types.ts is written by hand; this keeps it true to the migrations. A fresh database is migrated
// (SQLite, or PostgreSQL when DATABASE_URL is set: the suite runs both) and its columns, read from
// pragma_table_info / information_schema, are compared with what db/types.ts declares, read from its
// text: the same tables, the same columns, the same nullability, and a type of the same family.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { sql } from "kysely";
import { type DatabaseHandle, dropSchema, migrateToLatest, openDatabase } from "./connection.ts";

type Family = "text" | "number" | "boolean" | "timestamp" | "bytes";
type Column = { nullable: boolean; family: Family };
type Shape = Map<string, Map<string, Column>>;

/** Tables in the database that db/types.ts leaves out on purpose. */
const UNDECLARED = /^(kysely_migration|kysely_migration_lock|sqlite_sequence|users_name_fts(_\w+)?)$/;

/**
 * Where the two dialects' tables differ on purpose and db/types.ts follows PostgreSQL. Exact lines of
 * drift(), so an entry that stops being true fails too.
 */
const KNOWN: Record<"sqlite" | "postgres", string[]> = {
  sqlite: [
    // The integer rowid the users_name_fts index keys on (migration 0001); read in raw SQL only.
    "users.seq: in the database, not declared",
    // SQLite cannot add a NOT NULL column without a constant default (migration 0014): a trigger
    // fills it on insert, so it is never null when read.
    "users.sub_token: declared not nullable, is nullable",
  ],
  postgres: [],
};

/** The first top-level argument of `Name<a, b, c>`. */
function firstArgument(text: string): string {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "<" || c === "(" || c === "[") depth++;
    else if (c === ">" || c === ")" || c === "]") depth--;
    if (c === "," && depth === 0) return text.slice(0, i).trim();
  }
  return text.trim();
}

/** What a column's declared type reads as (the select side of ColumnType / Generated). */
export function declaredColumn(type: string): Column {
  let select = type.trim();
  for (;;) {
    const wrapped = /^(ColumnType|Generated)<([\s\S]*)>$/.exec(select);
    if (wrapped === null) break;
    select = firstArgument(wrapped[2] ?? "");
  }
  const parts = select.split("|").map((part) => part.trim());
  const nullable = parts.includes("null");
  const rest = parts.filter((part) => part !== "null");
  const family = (part: string): Family | undefined => {
    if (part === "Timestamp" || part === "Date") return "timestamp";
    if (part === "Bool" || part === "boolean") return "boolean";
    if (part === "BigIntColumn" || part === "number") return "number";
    if (part === "Buffer" || part === "Uint8Array") return "bytes";
    if (part === "string" || /^"[^"]*"$/.test(part) || /^[A-Z]\w*$/.test(part)) return "text";
    return undefined;
  };
  const families = new Set(rest.map(family));
  // Drivers hand some columns back in two forms: number | string (pg bigint), boolean | number
  // (SQLite 0/1), string | Date (pg timestamptz); the richer family names the column.
  for (const f of ["timestamp", "boolean", "number", "bytes"] as const) {
    if (families.has(f)) return { nullable, family: f };
  }
  if (families.size === 1 && families.has("text")) return { nullable, family: "text" };
  throw new Error(`db/types.ts: cannot read the column type ${type}`);
}

/** Table → column → declared shape, from the text of db/types.ts. */
export function declaredShape(text: string): Shape {
  const interfaces = new Map<string, Map<string, string>>();
  for (const match of text.matchAll(/^export interface (\w+) \{\n([\s\S]*?)^\}/gm)) {
    const properties = new Map<string, string>();
    for (const line of (match[2] ?? "").split("\n")) {
      const trimmed = line.trim();
      if (trimmed === "" || /^(\/\*\*|\*|\/\/)/.test(trimmed)) continue;
      const property = /^(\w+): (.+);$/.exec(trimmed);
      if (property === null) throw new Error(`db/types.ts: cannot read "${trimmed}" in ${match[1]}`);
      properties.set(property[1] ?? "", property[2] ?? "");
    }
    interfaces.set(match[1] ?? "", properties);
  }
  const database = interfaces.get("Database");
  if (database === undefined) throw new Error("db/types.ts declares no Database");
  const shape: Shape = new Map();
  for (const [table, name] of database) {
    const properties = interfaces.get(name);
    if (properties === undefined) throw new Error(`db/types.ts: ${table} is a ${name}, not declared there`);
    shape.set(table, new Map([...properties].map(([column, type]) => [column, declaredColumn(type)])));
  }
  return shape;
}

function familyOf(dialect: "sqlite" | "postgres", type: string): Family[] {
  const t = type.toLowerCase();
  if (dialect === "postgres") {
    if (t.startsWith("timestamp")) return ["timestamp"];
    if (t === "boolean") return ["boolean"];
    if (["bigint", "integer", "smallint", "double precision", "real", "numeric"].includes(t))
      return ["number"];
    if (t === "bytea") return ["bytes"];
    return ["text"]; // text, character varying, uuid
  }
  // SQLite stores timestamps as ISO text and booleans as 0/1.
  if (t === "text" || t.startsWith("varchar")) return ["text", "timestamp"];
  if (t === "integer" || t === "bigint") return ["number", "boolean"];
  if (t === "real") return ["number"];
  if (t === "blob") return ["bytes"];
  return [];
}

type Actual = Map<string, Map<string, { nullable: boolean; type: string }>>;

async function migratedShape(handle: DatabaseHandle): Promise<Actual> {
  const shape: Actual = new Map();
  if (handle.dialect === "sqlite") {
    const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(
      handle.db,
    );
    for (const { name } of tables.rows) {
      const { rows } = await sql<{ name: string; type: string; notnull: number; pk: number }>`
        SELECT name, type, "notnull", pk FROM pragma_table_info(${name})`.execute(handle.db);
      shape.set(
        name,
        new Map(rows.map((c) => [c.name, { nullable: c.notnull === 0 && c.pk === 0, type: c.type }])),
      );
    }
    return shape;
  }
  const { rows } = await sql<{
    table_name: string;
    column_name: string;
    is_nullable: string;
    data_type: string;
  }>`
    SELECT table_name, column_name, is_nullable, data_type FROM information_schema.columns
    WHERE table_schema = current_schema()`.execute(handle.db);
  for (const c of rows) {
    const table = shape.get(c.table_name) ?? new Map();
    table.set(c.column_name, { nullable: c.is_nullable === "YES", type: c.data_type });
    shape.set(c.table_name, table);
  }
  return shape;
}

/** Every difference between what db/types.ts declares and what the migrations made. */
export function drift(dialect: "sqlite" | "postgres", declared: Shape, actual: Actual): string[] {
  const problems: string[] = [];
  const tables = [...actual.keys()].filter((table) => !UNDECLARED.test(table));
  for (const table of tables)
    if (!declared.has(table)) problems.push(`${table}: in the database, not declared`);
  for (const [table, columns] of declared) {
    const real = actual.get(table);
    if (real === undefined) {
      problems.push(`${table}: declared, not in the database`);
      continue;
    }
    for (const column of real.keys()) {
      if (!columns.has(column)) problems.push(`${table}.${column}: in the database, not declared`);
    }
    for (const [column, want] of columns) {
      const got = real.get(column);
      if (got === undefined) {
        problems.push(`${table}.${column}: declared, not in the database`);
        continue;
      }
      if (got.nullable !== want.nullable) {
        problems.push(
          `${table}.${column}: declared ${want.nullable ? "" : "not "}nullable, is ${got.nullable ? "" : "not "}nullable`,
        );
      }
      if (!familyOf(dialect, got.type).includes(want.family)) {
        problems.push(`${table}.${column}: declared ${want.family}, is ${got.type}`);
      }
    }
  }
  return problems;
}

const TYPES = readFileSync(new URL("./types.ts", import.meta.url), "utf8");

test("db/types.ts declares the tables and columns the migrations make: names, nullability, type family", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-drift-"));
  const databaseUrl = process.env.DATABASE_URL;
  const schema = databaseUrl === undefined ? undefined : `drift_${process.pid}_${Date.now()}`;
  const handle = await openDatabase({ dataDir, databaseUrl, ...(schema === undefined ? {} : { schema }) });
  try {
    await migrateToLatest(handle);
    const declared = declaredShape(TYPES);
    assert.ok(declared.size >= 20 && declared.get("users")?.has("sub_token"), "the parser reads db/types.ts");
    const actual = await migratedShape(handle);
    assert.ok((actual.get("users")?.size ?? 0) > 10, "the database's columns are read");
    const known = KNOWN[handle.dialect];
    assert.deepEqual(drift(handle.dialect, declared, actual), known);

    // Mutations of db/types.ts are caught: a column made nullable, one retyped, one renamed, one dropped.
    const mutate = (from: string, to: string) => {
      assert.ok(TYPES.includes(from), from);
      return drift(handle.dialect, declaredShape(TYPES.replace(from, to)), actual).filter(
        (problem) => !known.includes(problem),
      );
    };
    assert.deepEqual(mutate("  password_hash: string;", "  password_hash: string | null;"), [
      "admins.password_hash: declared nullable, is not nullable",
    ]);
    assert.deepEqual(
      mutate("  last_reset_at: Timestamp | null;", "  last_reset_at: BigIntColumn | null;").map((p) =>
        p.replace(/, is .*/, ""),
      ),
      ["users.last_reset_at: declared number"],
    );
    assert.deepEqual(mutate("  online_at: Timestamp | null;", "  online_on: Timestamp | null;"), [
      "users.online_at: in the database, not declared",
      "users.online_on: declared, not in the database",
    ]);
    assert.deepEqual(mutate("  sub_last_user_agent: string | null;\n", ""), [
      "users.sub_last_user_agent: in the database, not declared",
    ]);
  } finally {
    if (schema !== undefined) await dropSchema(handle, schema);
    await handle.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
