// The user lifecycle (issue 12): limits, expiry, on-hold, periods and what was last seen of a user.
// - status: active | disabled | limited | expired | on_hold. Admins set active, disabled and on_hold;
//   limited and expired follow from the numbers (features/users/lifecycle).
// - used_bytes is the current period's traffic (× the server's usage_coefficient), lifetime_used_bytes
//   every period's; data_limit_bytes null = unlimited; data_limit_reset says when used_bytes starts over.
// - expire_at null = never. on_hold: the expiry clock (on_hold_duration_seconds) starts at the first
//   traffic or at on_hold_timeout_at, whichever is first.
// - online_at: the last collection that saw traffic; sub_updated_at / sub_last_user_agent: the last
//   /sub fetch, written in batches (never one write per request).
// - servers.usage_coefficient: a server's bytes count × this towards a user's used_bytes.
// Internal columns of the lifecycle job (docs/LIFECYCLE.md), never shown by the API:
// - next_reset_at: when used_bytes starts over (null: no_reset, or not computed yet: the job fills it);
// - notified_usage_percent: the highest usage threshold notified in this period (0: none);
// - next_notice_percent: the next threshold to look for (null: none left; 0: judge again), so the
//   partial index users_usage_notice holds only the users a usage notice may be due for;
// - expiring_notified_at: user.expiring was sent for the current expire_at (null: not yet).
// Triggers: a status change across "admitted" (active, on_hold) and not admitted marks the user's
// active grants 'pending', so the reconciler adds or removes them on the cores. The subscription's
// change feed for these columns is migration 0017's trigger. used_bytes growing, online_at and the
// internal columns feed neither.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  const add = (column: string, type: string, rest = "") =>
    sql`ALTER TABLE users ADD COLUMN ${sql.raw(column)} ${sql.raw(type)} ${sql.raw(rest)}`.execute(db);
  const ts = t.timestamp as string;
  await add(
    "status",
    "text",
    "NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'limited', 'expired', 'on_hold'))",
  );
  await add("data_limit_bytes", "bigint", "CHECK (data_limit_bytes IS NULL OR data_limit_bytes >= 0)");
  await add(
    "data_limit_reset",
    "text",
    "NOT NULL DEFAULT 'no_reset' CHECK (data_limit_reset IN ('no_reset', 'day', 'week', 'month', 'month_rolling', 'year'))",
  );
  await add("used_bytes", "bigint", "NOT NULL DEFAULT 0");
  await add("lifetime_used_bytes", "bigint", "NOT NULL DEFAULT 0");
  await add("last_reset_at", ts);
  await add("expire_at", ts);
  await add("on_hold_duration_seconds", "bigint");
  await add("on_hold_timeout_at", ts);
  await add("online_at", ts);
  await add("sub_updated_at", ts);
  await add("sub_last_user_agent", "text");
  await sql`ALTER TABLE servers ADD COLUMN usage_coefficient ${sql.raw(dialect === "postgres" ? "double precision" : "real")}
    NOT NULL DEFAULT 1 CHECK (usage_coefficient >= 0)`.execute(db);
  await db.schema.createIndex("users_status").on("users").columns(["status", "created_at", "id"]).execute();
  // expire_at ranges: users_expire_at_id of migration 0018 (expire_at, id) serves them.

  await add("next_reset_at", ts);
  await add("notified_usage_percent", "integer", "NOT NULL DEFAULT 0");
  await add("next_notice_percent", "integer", "DEFAULT 0");
  await add("expiring_notified_at", ts);
  // What each statement of a lifecycle tick looks for, so a tick reads only the users it changes.
  await sql`CREATE INDEX users_status_expire ON users (status, expire_at) WHERE expire_at IS NOT NULL`.execute(
    db,
  );
  await sql`CREATE INDEX users_next_reset ON users (next_reset_at) WHERE data_limit_reset <> 'no_reset'`.execute(
    db,
  );
  await sql`CREATE INDEX users_next_reset_unset ON users (id)
    WHERE data_limit_reset <> 'no_reset' AND next_reset_at IS NULL`.execute(db);
  await sql`CREATE INDEX users_on_hold_timeout ON users (on_hold_timeout_at) WHERE status = 'on_hold'`.execute(
    db,
  );
  await sql`CREATE INDEX users_over_limit ON users (id)
    WHERE status = 'active' AND data_limit_bytes IS NOT NULL AND used_bytes >= data_limit_bytes`.execute(db);
  await sql`CREATE INDEX users_limited ON users (id) WHERE status IN ('limited', 'expired')`.execute(db);
  await sql`CREATE INDEX users_expiring ON users (expire_at)
    WHERE status = 'active' AND expiring_notified_at IS NULL AND expire_at IS NOT NULL`.execute(db);
  await sql`CREATE INDEX users_usage_notice ON users (id)
    WHERE data_limit_bytes > 0 AND used_bytes * 100 >= data_limit_bytes * next_notice_percent`.execute(db);
  if (dialect === "sqlite") await lifecycleTriggersSqlite(db);
  else await lifecycleTriggersPostgres(db);
}

const ADMITTED = "('active', 'on_hold')";

async function lifecycleTriggersSqlite(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TRIGGER users_admission_changed AFTER UPDATE OF status ON users
    WHEN (OLD.status IN ${sql.raw(ADMITTED)}) IS NOT (NEW.status IN ${sql.raw(ADMITTED)})
    BEGIN
      UPDATE user_access SET sync_state = 'pending', sync_error = NULL
        WHERE user_id = NEW.id AND is_active = 1;
    END`.execute(db);
}

async function lifecycleTriggersPostgres(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE FUNCTION users_admission_changed() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$ BEGIN
      UPDATE user_access SET sync_state = 'pending', sync_error = NULL
        WHERE user_id = NEW.id AND is_active;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER users_admission_changed AFTER UPDATE OF status ON users FOR EACH ROW
    WHEN ((OLD.status IN ${sql.raw(ADMITTED)}) IS DISTINCT FROM (NEW.status IN ${sql.raw(ADMITTED)}))
    EXECUTE FUNCTION users_admission_changed()`.execute(db);
}
