// The users list's filters and sorts (issue 12 item 6) as index ranges at 1,000,000 users:
// - (used_bytes, id) and (expire_at, id): sort by usage or expiry, keyset-paged on (key, id);
// - (status, used_bytes, id) and (status, expire_at, id): the same inside one status (the status
//   filter with several statuses reads one range per status and merges them; (status, created_at,
//   id) came with 0015);
// - users_usage_ratio: used_over_percent, a range of used_bytes / data_limit_bytes over the users
//   with a limit (a zero limit is reached by any usage: 1e18), covering for counts. The expression is the one
//   features/users/users.repository.ts queries with (USAGE_RATIO), character for character: both
//   planners match an expression index only on the same expression.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

export function usageRatioSql(dialect: DialectName): string {
  return dialect === "postgres"
    ? "(CASE WHEN data_limit_bytes = 0 THEN 1e18 ELSE CAST(used_bytes AS double precision) / data_limit_bytes END)"
    : "(CASE WHEN data_limit_bytes = 0 THEN 1e18 ELSE CAST(used_bytes AS REAL) / data_limit_bytes END)";
}

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const index = (name: string, columns: string[]) =>
    db.schema.createIndex(name).on("users").columns(columns).execute();
  await index("users_used_bytes_id", ["used_bytes", "id"]);
  await index("users_expire_at_id", ["expire_at", "id"]);
  await index("users_status_used_bytes", ["status", "used_bytes", "id"]);
  await index("users_status_expire_at", ["status", "expire_at", "id"]);
  // The exact recheck's columns and status ride along: a count over the range reads the index alone.
  await sql`CREATE INDEX users_usage_ratio
    ON users (${sql.raw(usageRatioSql(dialect))}, used_bytes, data_limit_bytes, status)
    WHERE data_limit_bytes IS NOT NULL`.execute(db);
}
