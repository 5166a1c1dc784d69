// The drivers' errors that mean "the database is not there right now", not "this request is wrong":
// PostgreSQL down, restarting or cutting connections (SQLSTATE classes 08 and 57P, the pool's
// connect errors and timeouts, sockets refused or reset), SQLite busy past busy_timeout, locked,
// disk full, or an I/O error. They become DatabaseUnavailableError (503 `database_unavailable`
// with Retry-After) on every connection of both dialects (unique-violation.ts wraps them), so an
// outage is a 503 on every code path, never a 500; callers that can do without the database
// (the /sub answers in memory) catch that class.
import { DatabaseUnavailableError } from "../lib/errors.ts";

const PG_STATES = /^(08|57P0[1-4]|53300|53100)/;
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
const SQLITE_CODES = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL)(_|$)/;
// pg's own texts for a connection that ended or never came (they carry no code).
const PG_TEXTS =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|terminating connection)/;

function isUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 4 || typeof error !== "object" || error === null) return false;
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === "string" && (PG_STATES.test(code) || SOCKET_CODES.has(code) || SQLITE_CODES.test(code)))
    return true;
  if (typeof message === "string" && PG_TEXTS.test(message)) return true;
  // Node reports a refused connection to a name with several addresses as an AggregateError.
  if (Array.isArray(errors) && errors.some((inner) => isUnavailable(inner, depth + 1))) return true;
  return isUnavailable(cause, depth + 1);
}

/** The driver error → DatabaseUnavailableError when the database is not reachable or cannot write now. */
export function translateUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError || !isUnavailable(error)) return error;
  return new DatabaseUnavailableError("the database is not available now; try again shortly", {
    cause: error,
  });
}
