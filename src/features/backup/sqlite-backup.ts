// SQLite backups with the online backup API, consistent while the service writes. A backup is one
// SQLite file: the copied database plus a `portcullis_backup` table saying what it is (format,
// version, time, the key's fingerprint) and, unless left out, the secret key for its sealed values.
// Restoring copies it back the same way and drops that table.
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import { loadSqlite } from "../../db/connection.ts";
import { type BackupMeta, META_TABLE, partialPath, writeAtomically } from "./backup-meta.ts";

/** One step copies every page in one read transaction: a snapshot writers never restart. */
export const ALL_PAGES = 0x7fffffff;

/**
 * Copies `source` into a new file at `file` (which must not exist yet) and records `meta` in it.
 * `pagesPerStep`: ALL_PAGES from a connection of its own (the CLI: another process's writes would
 * restart a step-wise copy, forever under load); fewer from the service's own connection, whose
 * writes SQLite carries into the copy, so the event loop is never blocked for the whole file.
 */
export async function backupSqlite(
  source: BetterSqlite3.Database,
  file: string,
  meta: BackupMeta,
  pagesPerStep: number,
): Promise<void> {
  await writeAtomically(file, async (partial) => {
    closeSync(openSync(partial, "wx", 0o600));
    await source.backup(partial, { progress: () => pagesPerStep });
    const SQLite = loadSqlite();
    const copy = new SQLite(partial);
    try {
      copy.pragma("journal_mode = DELETE");
      copy.exec(`CREATE TABLE ${META_TABLE} (name TEXT PRIMARY KEY, value TEXT)`);
      const insert = copy.prepare(`INSERT INTO ${META_TABLE} (name, value) VALUES (?, ?)`);
      copy.transaction(() => {
        for (const [name, value] of Object.entries(meta)) insert.run(name, value ?? null);
      })();
    } finally {
      copy.close();
    }
  });
}

/** Non-null values of every `*_sealed` column in a SQLite file, by `table.column` (found in its schema,
 * so a table added later is counted without a list to keep). */
export function countSealedValues(file: string): Record<string, number> {
  const SQLite = loadSqlite();
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const counts: Record<string, number> = {};
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all() as { name: string }[];
    for (const { name } of tables) {
      const columns = db.prepare("SELECT name FROM pragma_table_info(?)").all(name) as { name: string }[];
      for (const column of columns.filter((c) => c.name.endsWith("_sealed"))) {
        const row = db
          .prepare(`SELECT COUNT(*) AS n FROM "${name}" WHERE "${column.name}" IS NOT NULL`)
          .get() as { n: number };
        if (row.n > 0) counts[`${name}.${column.name}`] = row.n;
      }
    }
    return counts;
  } finally {
    db.close();
  }
}

/** The file given is not a backup this version can read. */
export class BackupFileError extends Error {}

/** Opens a backup file read-only and reads what it is; a clear error when it is not one of ours. */
export function readSqliteBackup(file: string): { meta: BackupMeta; migrations: string[] } {
  const SQLite = loadSqlite();
  let db: BetterSqlite3.Database;
  try {
    db = new SQLite(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new BackupFileError(`${file} cannot be opened as SQLite: ${(error as Error).message}`);
  }
  try {
    const hasMeta = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(META_TABLE) as unknown;
    if (hasMeta === undefined) {
      throw new BackupFileError(`${file} is not a Portcullis backup (no ${META_TABLE} table)`);
    }
    const rows = db.prepare(`SELECT name, value FROM ${META_TABLE}`).all() as {
      name: string;
      value: string | null;
    }[];
    const meta = Object.fromEntries(rows.map((row) => [row.name, row.value])) as BackupMeta;
    const integrity = db.pragma("integrity_check", { simple: true });
    if (integrity !== "ok") {
      const said = String(integrity).split("\n").slice(0, 3).join("; ");
      throw new BackupFileError(`${file} is damaged (integrity_check: ${said})`);
    }
    const migrations = (
      db.prepare("SELECT name FROM kysely_migration ORDER BY name").all() as { name: string }[]
    ).map((row) => row.name);
    return { meta, migrations };
  } catch (error) {
    if (error instanceof BackupFileError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (/no such table: kysely_migration/.test(message)) {
      throw new BackupFileError(`${file} is not a Portcullis backup (no migrations table)`);
    }
    throw new BackupFileError(`${file} cannot be read as a SQLite backup: ${message}`);
  } finally {
    db.close();
  }
}

/** The database file of an empty data directory is absent or has no bytes yet. */
export function isSqliteTargetEmpty(databaseFile: string): boolean {
  return (
    (!existsSync(databaseFile) || statSync(databaseFile).size === 0) && !existsSync(`${databaseFile}-wal`)
  );
}

/** Copies a backup into `databaseFile` (absent or empty), without its meta table, in WAL mode, 0600. */
export async function restoreSqlite(file: string, databaseFile: string): Promise<void> {
  const SQLite = loadSqlite();
  const source = new SQLite(file, { readonly: true, fileMustExist: true });
  const partial = partialPath(databaseFile);
  closeSync(openSync(partial, "wx", 0o600));
  try {
    await source.backup(partial, { progress: () => ALL_PAGES });
    const copy = new SQLite(partial);
    try {
      copy.exec(`DROP TABLE ${META_TABLE}`);
      copy.pragma("journal_mode = WAL");
    } finally {
      copy.close();
    }
    renameSync(partial, databaseFile);
  } finally {
    source.close();
    rmSync(partial, { force: true });
  }
}
