// Read-only access to a peer panel's database (issue 51): a SQLite file (opened read-only, never
// written), a PostgreSQL URL, or a MySQL/MariaDB URL (Marzban's and PasarGuard's usual database). Plain SQL text in, plain rows out; the readers of each panel
// (marzban.repository.ts, xui.repository.ts) know the tables. Every connection has a deadline.
import { existsSync } from "node:fs";
import pg from "pg";
import { loadSqlite } from "../../db/connection.ts";
import { ValidationError } from "../../lib/errors.ts";

export type SourceRow = Record<string, unknown>;

export type SourceDb = {
  /** What the URL names, without its password: for the report. */
  readonly label: string;
  readonly dialect: "sqlite" | "postgres" | "mysql";
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

/** Opens `--db`: a path to a SQLite file, `sqlite:<path>`, `postgres://…` or `mysql://…` (`mariadb://…`). */
export async function openSource(db: string): Promise<SourceDb> {
  if (/^postgres(ql)?:\/\//i.test(db)) return openPostgres(db);
  if (/^(mysql|mariadb):\/\//i.test(db)) return openMysql(db.replace(/^mariadb:/i, "mysql:"));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(db))
    throw badSource("--db: a SQLite file, a postgres:// URL or a mysql:// URL");
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

const withoutPassword = (url: string) => url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");

async function openPostgres(url: string): Promise<SourceDb> {
  const label = withoutPassword(url);
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

/** The part of mysql2's promise API used here (mysql2 ships its own types; this keeps them local). */
type MysqlConnection = {
  query(options: { sql: string; timeout: number }, values?: unknown[]): Promise<[unknown, unknown]>;
  end(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): void;
};
type Mysql2 = { createConnection(options: Record<string, unknown>): Promise<MysqlConnection> };

async function openMysql(url: string): Promise<SourceDb> {
  const label = withoutPassword(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badSource(`--db: not a URL: ${label}`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  if (database === "" || database.includes("/")) throw badSource(`--db: name the database: ${label}`);
  // Loaded when a MySQL source is opened, so the rest of the panel does not need the driver.
  const specifier = "mysql2/promise";
  let mysql: Mysql2;
  try {
    mysql = ((await import(specifier)) as { default: Mysql2 }).default;
  } catch {
    throw badSource("--db: MySQL sources need the mysql2 package (npm install)");
  }
  let connection: MysqlConnection;
  try {
    connection = await mysql.createConnection({
      host: parsed.hostname || "127.0.0.1",
      port: parsed.port === "" ? 3306 : Number(parsed.port),
      user: decodeURIComponent(parsed.username) || "root",
      password: decodeURIComponent(parsed.password),
      database,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Naive DATETIMEs stay text (Marzban writes UTC without a zone); BIGINTs come back as text.
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      charset: "utf8mb4",
      multipleStatements: false,
    });
  } catch (error) {
    throw badSource(`--db: cannot connect to ${label}: ${(error as Error).message}`);
  }
  connection.on("error", () => {});
  const query = async (sql: string, values?: unknown[]) =>
    (await connection.query({ sql, timeout: STATEMENT_TIMEOUT_MS }, values))[0] as SourceRow[];
  return {
    label,
    dialect: "mysql",
    all: (sql) => query(sql),
    columns: async (table) =>
      new Set(
        (
          await query(
            "SELECT column_name AS name FROM information_schema.columns WHERE table_name = ? AND table_schema = database()",
            [table],
          )
        ).map((r) => String(r.name).toLowerCase()),
      ),
    close: () => connection.end(),
  };
}
