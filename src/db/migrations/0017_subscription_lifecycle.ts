// The subscription tells the truth (issue 12): a change of what GET /sub shows of a user's lifecycle
// (status, data_limit_bytes, data_limit_reset, expire_at, last_reset_at, or used_bytes going down: a
// reset) adds a subscription_changes row, so every instance drops the user's record at once and
// renders the placeholder, the links and Subscription-Userinfo's total/expire from the new numbers.
// used_bytes growing (every traffic collection) adds none: the totals in memory are refreshed by the
// cache's maximum age instead (PORTCULLIS_SUB_CACHE_MAX_AGE_MS). Row-level triggers with a WHEN, so an
// UPDATE of used_bytes for many users queues nothing (the condition is checked per row, in C).
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

const COLUMNS = "status, data_limit_bytes, data_limit_reset, expire_at, last_reset_at, used_bytes";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const differs = dialect === "sqlite" ? "IS NOT" : "IS DISTINCT FROM";
  const when = [
    ...["status", "data_limit_bytes", "data_limit_reset", "expire_at", "last_reset_at"].map(
      (column) => `OLD.${column} ${differs} NEW.${column}`,
    ),
    "NEW.used_bytes < OLD.used_bytes",
  ].join(" OR ");
  if (dialect === "sqlite") {
    await sql`CREATE TRIGGER subscription_changes_user_lifecycle AFTER UPDATE OF ${sql.raw(COLUMNS)} ON users
      WHEN ${sql.raw(when)}
      BEGIN INSERT INTO subscription_changes (user_id) VALUES (NEW.id); END`.execute(db);
  } else {
    // subscription_changes_row() (migration 0008) adds a row for NEW.id of users.
    await sql`CREATE TRIGGER subscription_changes_user_lifecycle AFTER UPDATE OF ${sql.raw(COLUMNS)} ON users
      FOR EACH ROW WHEN (${sql.raw(when)}) EXECUTE FUNCTION subscription_changes_row()`.execute(db);
  }
}
