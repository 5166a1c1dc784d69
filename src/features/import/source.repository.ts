// Read-only access to a peer panel's database (issue 51): a SQLite file (opened read-only, never
// written), or a PostgreSQL URL. Plain SQL text in, plain rows out; the readers of each panel
// (marzban.repository.ts, xui.repository.ts) know the tables. Every connection has a deadline.
import { existsSync } from "node:fs";
import pg from "pg";
import { loadSqlite } from "../../db/connection.ts";
import { ValidationError } from "../../lib/errors.ts";

export type SourceRow = Record<string, unknown>;

export type SourceDb = {
  /** What the URL names, without its password: for the report. */
  readonly label: string;
  readonly dialect: "sqlite" | "postgres";
  all(sql: string): Promise<SourceRow[]>;
  /** The table's columns (lower case); empty when the table does not exist. */
  columns(table: string): Promise<Set<string>>;
  close(): Promise<void>;
};

const CONNECT_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 120_000;

function badSource(message: string): ValidationError {
  return new ValidationError(message, [{ path: "db", message }]);
}

/** Opens `--db`: a path to a SQLite file, `sqlite:<path>`, or `postgres://…`. */
export async function openSource(db: string): Promise<SourceDb> {
  if (/^postgres(ql)?:\/\//i.test(db)) return openPostgres(db);
  if (/^(mysql|mariadb):\/\//i.test(db)) {
    throw badSource("MySQL/MariaDB sources are not supported yet: copy the database to SQLite or PostgreSQL");
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(db)) throw badSource("--db: a SQLite file or a postgres:// URL");
  return openSqlite(db.replace(/^sqlite:/, ""));
}

function openSqlite(path: string): SourceDb {
  if (!existsSync(path)) throw badSource(`--db: no such file: ${path}`);
  const Database = loadSqlite();
  let handle: InstanceType<typeof Database>;
  try {
    handle = new Database(path, { readonly: true, fileMustExist: true, timeout: CONNECT_TIMEOUT_MS });
    handle.prepare("SELECT count(*) FROM sqlite_master").get();
  } catch (error) {
    throw badSource(`--db: not a SQLite database: ${path} (${(error as Error).message})`);
  }
  return {
    label: path,
    dialect: "sqlite",
    all: async (sql) => handle.prepare(sql).all() as SourceRow[],
    columns: async (table) =>
      new Set(
        (handle.prepare("SELECT name FROM pragma_table_info(?)").all(table) as { name: string }[]).map((r) =>
          r.name.toLowerCase(),
        ),
      ),
    close: async () => {
      handle.close();
    },
  };
}

async function openPostgres(url: string): Promise<SourceDb> {
  const label = url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
  // Naive timestamps stay text (Marzban writes UTC without a zone); bigints come back as text.
  const types = {
    getTypeParser: (oid: number, format?: "text" | "binary") =>
      oid === 1114 ? (value: string) => value : pg.types.getTypeParser(oid, format as "text"),
  };
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS,
    types,
  });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw badSource(`--db: cannot connect to ${label}: ${(error as Error).message}`);
  }
  return {
    label,
    dialect: "postgres",
    all: async (sql) => (await client.query(sql)).rows as SourceRow[],
    columns: async (table) =>
      new Set(
        (
          await client.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND table_schema = current_schema()",
            [table],
          )
        ).rows.map((r: { column_name: string }) => r.column_name.toLowerCase()),
      ),
    close: () => client.end(),
  };
}
