// Opens the database for the configured dialect and runs migrations. SQLite: WAL, foreign keys on,
// a busy timeout. PostgreSQL: a pg pool; `schema` (tests) isolates one test run in its own schema.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect, sql } from "kysely";
import { startCheckpointer } from "./checkpointer.ts";
import { type DialectName, SqliteBooleanPlugin } from "./dialect.ts";
import { migrations } from "./migrations/index.ts";
import type { Database } from "./types.ts";
import { translatingUniqueViolations } from "./unique-violation.ts";

/**
 * better-sqlite3 12 (compiled from source) is the last line that runs on Node 20, but on Node 24 its
 * ObjectWrap destructors abort the process (RemoveEnvironmentCleanupHook assertion) whenever a
 * statement is finalized outside a context: at exit, and in any garbage collection that frees one
 * (seen in a scavenge at start-up with `--max-semi-space-size=8`, 2026-11-26).
 * 13 is built on Node-API, ships prebuilt binaries inside the package, and needs Node 22+, so it is
 * an optional dependency (alias better-sqlite3-napi): npm skips it quietly on Node 20 instead of
 * warning EBADENGINE. Pick by the running Node; 12 if 13 could not be installed, with a warning.
 */
export function loadSqlite(): typeof BetterSqlite3 {
  return createRequire(import.meta.url)(sqliteDriver()) as typeof BetterSqlite3;
}

/** The resolved path of the driver loadSqlite() loads (the checkpoint worker loads the same one). */
export function sqliteDriver(): string {
  const require = createRequire(import.meta.url);
  const major = Number(process.versions.node.split(".")[0]);
  if (major >= 22) {
    try {
      return require.resolve("better-sqlite3-napi");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw error;
      warnFallback(major);
    }
  }
  return require.resolve("better-sqlite3");
}

let hasWarnedFallback = false;

function warnFallback(major: number): void {
  if (hasWarnedFallback) return;
  hasWarnedFallback = true;
  process.emitWarning(
    `better-sqlite3-napi (better-sqlite3 13) is not installed, so SQLite runs on better-sqlite3 12, ` +
      `which can abort the process on Node ${major}; run \`npm install\` (or \`npm ci\`) with this Node ` +
      "version so npm installs the optional dependency",
    { code: "PORTCULLIS_SQLITE_FALLBACK" },
  );
}

export type DatabaseHandle = {
  db: Kysely<Database>;
  dialect: DialectName;
  /** SQLite: the one connection Kysely uses, for the online backup API (features/backup). */
  sqlite?: BetterSqlite3.Database;
  /** PostgreSQL schema this handle is confined to (tests), if any. */
  schema?: string;
  close(): Promise<void>;
};

export type DatabaseOptions = {
  dataDir: string;
  databaseUrl: string | undefined;
  /** PostgreSQL only: use (and create) this schema instead of the default search_path. */
  schema?: string;
  poolSize?: number;
  /**
   * SQLite only: WAL checkpoints by a worker thread this often (db/checkpointer.ts) instead of inside
   * the serving connection's commits. Unset or 0: SQLite checkpoints as it does by default.
   */
  checkpointIntervalMs?: number;
};

/** How often the checkpoint worker of `serve` copies the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 1000;

/** Where the embedded database lives inside DATA_DIR. */
export function sqliteFile(dataDir: string): string {
  return join(dataDir, "portcullis.db");
}

/** Which database a configuration opens, for people: the SQLite file, or PostgreSQL without secrets. */
export function describeDatabase(options: Pick<DatabaseOptions, "dataDir" | "databaseUrl">): string {
  if (options.databaseUrl === undefined) return `SQLite ${sqliteFile(options.dataDir)}`;
  try {
    const url = new URL(options.databaseUrl);
    const user = url.username === "" ? "" : `${decodeURIComponent(url.username)}@`;
    return `PostgreSQL ${user}${url.host}${url.pathname}`;
  } catch {
    return "PostgreSQL (DATABASE_URL)";
  }
}

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== undefined) return openPostgres(options.databaseUrl, options);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const file = sqliteFile(options.dataDir);
  keepPrivate(file);
  const SQLite = loadSqlite();
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("synchronous = NORMAL");
  const intervalMs = options.checkpointIntervalMs ?? 0;
  const checkpointer =
    intervalMs > 0
      ? startCheckpointer(sqlite, {
          ...{ file, driver: sqliteDriver(), intervalMs },
          onFailure: (error) =>
            process.emitWarning(`SQLite checkpoints are back in the serving thread: ${error.message}`, {
              code: "PORTCULLIS_SQLITE_CHECKPOINTER",
            }),
        })
      : undefined;
  const db = new Kysely<Database>({
    dialect: translatingUniqueViolations(new SqliteDialect({ database: sqlite })),
    plugins: [new SqliteBooleanPlugin()],
  });
  const close = async () => {
    await checkpointer?.stop();
    await db.destroy();
  };
  return { db, dialect: "sqlite", sqlite, close };
}

/**
 * The database holds sealed secrets and password hashes: owner-only, like the key file. Created
 * 0600 before SQLite opens it (SQLite gives its -wal and -shm files the database file's mode);
 * files an older version created are narrowed.
 */
function keepPrivate(file: string): void {
  closeSync(openSync(file, "a", 0o600));
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    if (existsSync(path) && (statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  }
}

async function openPostgres(connectionString: string, options: DatabaseOptions): Promise<DatabaseHandle> {
  // Loaded here, not with the module: an instance on SQLite never needs the driver.
  const { default: pg } = await import("pg");
  // int8 (bigint, count(*)) as JS numbers would lose precision past 2^53; keep strings, mappers convert.
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    statement_timeout: 30_000,
    ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema},public` }),
  });
  // An idle pooled connection that the server ends (a restart, pg_terminate_backend, DROP DATABASE
  // … WITH (FORCE)) makes the pool emit 'error'; without a listener that is an uncaught exception that
  // ends the process. The pool has already dropped the client, and the next query opens a new one
  // (or fails and is answered as a database error), so there is nothing to do here but not crash.
  pool.on("error", () => {});
  // A connection checked out of the pool (a transaction between two statements, a held connection)
  // emits 'error' on its own client when the server goes away (a PostgreSQL stopped with -m immediate
  // reset it): with no listener that too ends the process. The client is unusable after it; its next
  // query fails, is answered as database_unavailable, and the pool drops it on release.
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  const db = new Kysely<Database>({ dialect: translatingUniqueViolations(new PostgresDialect({ pool })) });
  if (options.schema !== undefined) {
    await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(options.schema)}`.execute(db);
  }
  return {
    db,
    dialect: "postgres",
    ...(options.schema === undefined ? {} : { schema: options.schema }),
    close: () => db.destroy(),
  };
}

export async function migrateToLatest(handle: DatabaseHandle): Promise<string[]> {
  const provider = {
    async getMigrations(): Promise<Record<string, Migration>> {
      const out: Record<string, Migration> = {};
      for (const [name, module] of Object.entries(migrations)) {
        out[name] = { up: (db: Kysely<unknown>) => module.up(db, handle.dialect) };
      }
      return out;
    },
  };
  const run = async (db: Kysely<Database>) => {
    // Kysely looks for its bookkeeping tables across all schemas; pin them to ours.
    const migrator = new Migrator({
      db,
      provider,
      // Numbers are handed out before work lands (0030-0032 of issues 49/50 landed out of order): a
      // database migrated to a later number still gets an earlier one that landed after it. Each
      // migration is independent of those numbered near it, so their order there does not matter.
      allowUnorderedMigrations: true,
      ...(handle.schema === undefined ? {} : { migrationTableSchema: handle.schema }),
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error !== undefined) throw error;
    return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
  };
  if (handle.schema === undefined) return run(handle.db);
  // A database shared by schemas (the tests): Kysely's introspection reads every schema's tables
  // and fails on one dropped at that moment, so migrating and dropping a schema take turns.
  return handle.db.connection().execute(async (db) => {
    await sql`SELECT pg_advisory_lock(${SCHEMA_DDL_LOCK})`.execute(db);
    try {
      return await run(db);
    } finally {
      await sql`SELECT pg_advisory_unlock(${SCHEMA_DDL_LOCK})`.execute(db);
    }
  });
}

/** Advisory lock key for creating/dropping per-test schemas in one database (dropSchema below). */
const SCHEMA_DDL_LOCK = 0x706f7274; // "port"

/** Drops a schema made for one test run, taking turns with migrations of other schemas. */
export async function dropSchema(handle: DatabaseHandle, schema: string): Promise<void> {
  await handle.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SCHEMA_DDL_LOCK})`.execute(trx);
    await sql`DROP SCHEMA ${sql.id(schema)} CASCADE`.execute(trx);
  });
}

export async function pingDatabase(handle: DatabaseHandle): Promise<void> {
  await sql`SELECT 1`.execute(handle.db);
}
