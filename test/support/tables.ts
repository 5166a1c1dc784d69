// Every row of every table of a database, in a form two databases can be compared by: each row as
// JSON with sorted keys (Buffers as base64, Dates as ISO strings, bigints as decimal text), sorted.
// SQLite: every table in sqlite_master (FTS5 shadow tables included); PostgreSQL: every base table
// of the connection's first schema on the search path. The migrator's tables are included.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { DatabaseHandle } from "../../src/db/connection.ts";

export type TableRows = Map<string, string[]>;

export async function allTables(handle: DatabaseHandle): Promise<string[]> {
  const names =
    handle.dialect === "sqlite"
      ? await sql<{
          name: string;
        }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`.execute(
          handle.db,
        )
      : await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(handle.db);
  return names.rows.map((row) => row.name).sort();
}

export async function dumpTables(handle: DatabaseHandle): Promise<TableRows> {
  const out: TableRows = new Map();
  for (const name of await allTables(handle)) {
    const rows = await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(name)}`.execute(handle.db);
    out.set(name, rows.rows.map((row) => canonical(row)).sort());
  }
  return out;
}

export function canonical(row: Record<string, unknown>): string {
  const entries = Object.keys(row)
    .sort()
    .map((key) => [key, normalise(row[key])]);
  return JSON.stringify(Object.fromEntries(entries));
}

function normalise(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return `base64:${value.toString("base64")}`;
  if (value instanceof Uint8Array) return `base64:${Buffer.from(value).toString("base64")}`;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** Many users fast (one transaction, 500 a statement), for tests that need a database of some size. */
export async function seedUsers(
  database: DatabaseHandle,
  count: number,
  prefix = "seeded user",
): Promise<void> {
  const now = new Date().toISOString();
  await database.db.transaction().execute(async (trx) => {
    for (let i = 0; i < count; i += 500) {
      const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) => ({
        id: randomUUID(),
        name: `${prefix} ${i + j}`,
        comment: null,
        telegram_id: null,
        created_at: now,
        updated_at: now,
      }));
      await trx.insertInto("users").values(rows).execute();
    }
  });
}
