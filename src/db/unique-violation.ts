// Unique-constraint violations become 409 problems in one place: every connection of both dialects
// is wrapped (connection.ts), so a race that a service's "is the name free?" check loses is a
// conflict on every code path, never a 500. Repositories that want a richer message or a retry
// (a drawn credential that collided) catch `UniqueViolationError` and read `table`/`columns`.
import type { CompiledQuery, DatabaseConnection, Dialect, Kysely } from "kysely";
import { type CodeOf, ConflictError } from "../lib/errors.ts";
import { translateUnavailable } from "./unavailable.ts";

/** `<table>(<columns sorted, comma-separated>)` → the problem's code and detail. */
const CATALOGUE: Record<string, { code: CodeOf<409>; detail: string }> = {
  "admins(username)": { code: "admin_username_taken", detail: "an admin with this username exists already" },
  "servers(name)": { code: "server_name_taken", detail: "a server with this name exists already" },
  "certificates(name)": {
    code: "certificate_name_taken",
    detail: "a certificate with this name exists already",
  },
  "templates(name)": { code: "template_name_taken", detail: "a template with this name exists already" },
  "server_inbounds(server_id,tag)": {
    code: "tag_taken",
    detail: "the tag is already used by another inbound of this server",
  },
  "server_inbounds(port,server_id)": {
    code: "port_taken",
    detail: "the port is already used by another inbound of this server",
  },
  "user_access(server_inbound_id,user_id)": {
    code: "access_exists",
    detail: "the user already has access to this inbound",
  },
  "user_access(proxy_user_id,server_inbound_id)": {
    code: "access_exists",
    detail: "the user already has access to this inbound",
  },
  "user_access(credential,server_inbound_id)": {
    code: "credential_taken",
    detail: "the drawn credential is already used on this inbound",
  },
};

const GENERIC: { code: CodeOf<409>; detail: string } = {
  code: "conflict",
  detail: "a record with these values exists already",
};

export class UniqueViolationError extends ConflictError {
  constructor(
    readonly table: string,
    /** Sorted column names of the violated constraint. */
    readonly columns: readonly string[],
    options?: { cause?: unknown },
  ) {
    const entry = CATALOGUE[`${table}(${columns.join(",")})`] ?? GENERIC;
    super(entry.detail, entry.code);
    if (options !== undefined) this.cause = options.cause;
  }

  /** Whether this violation is of the constraint over exactly these columns of `table`. */
  is(table: string, columns: readonly string[]): boolean {
    return this.table === table && [...columns].sort().join(",") === this.columns.join(",");
  }
}

/** The driver error → UniqueViolationError when it is a unique or primary-key violation. */
export function translateUniqueViolation(error: unknown): unknown {
  if (error instanceof UniqueViolationError) return error;
  const e = (error ?? {}) as { code?: unknown; message?: unknown; table?: unknown; detail?: unknown };
  if (e.code === "23505") {
    // PostgreSQL: `table` is a field; the columns are named in `detail`: Key (server_id, tag)=(…)
    const columns = /^Key \(([^)]*)\)=/.exec(String(e.detail ?? ""))?.[1]?.split(",") ?? [];
    return new UniqueViolationError(String(e.table ?? ""), sorted(columns), { cause: error });
  }
  if (e.code === "SQLITE_CONSTRAINT_UNIQUE" || e.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    // SQLite: UNIQUE constraint failed: server_inbounds.server_id, server_inbounds.tag
    const list = /constraint failed: (.*)$/.exec(String(e.message ?? ""))?.[1] ?? "";
    const qualified = list.split(",").map((part) => part.trim());
    const table = qualified[0]?.split(".")[0] ?? "";
    return new UniqueViolationError(table, sorted(qualified.map((q) => q.split(".").pop() ?? q)), {
      cause: error,
    });
  }
  return error;
}

function sorted(columns: string[]): string[] {
  return columns.map((c) => c.trim().replace(/^"|"$/g, "")).sort();
}

/**
 * A dialect whose connections throw UniqueViolationError and DatabaseUnavailableError
 * (unavailable.ts) instead of the drivers' own errors.
 */
export function translatingUniqueViolations(inner: Dialect): Dialect {
  return {
    createAdapter: () => inner.createAdapter(),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createIntrospector: (db: Kysely<unknown>) => inner.createIntrospector(db),
    createDriver: () => {
      const driver = inner.createDriver();
      const acquire = driver.acquireConnection.bind(driver);
      driver.acquireConnection = async () => {
        try {
          return patchConnection(await acquire());
        } catch (error) {
          throw translateUnavailable(error);
        }
      };
      return driver;
    },
  };
}

const patched = new WeakSet<DatabaseConnection>();

/** Patched once per pooled connection, in place: transactions and release get the same object. */
function patchConnection(connection: DatabaseConnection): DatabaseConnection {
  if (patched.has(connection)) return connection;
  const execute = connection.executeQuery.bind(connection);
  // async + await: the SQLite driver throws synchronously, PostgreSQL's rejects.
  connection.executeQuery = async <R>(query: CompiledQuery) => {
    try {
      return await execute<R>(query);
    } catch (error) {
      throw translateUnavailable(translateUniqueViolation(error));
    }
  };
  patched.add(connection);
  return connection;
}
