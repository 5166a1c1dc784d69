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
  await db.schema.createIndex("users_expire_at").on("users").column("expire_at").execute();
}
