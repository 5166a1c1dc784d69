// Every database trigger, declared once: what it reacts to, and the SQL it is on each dialect. The
// migrations that first made them (0001, 0008, 0014, 0015, 0017, 0019, 0022, 0023) are frozen; migration
// 0029 re-created every trigger (and PostgreSQL trigger function) from these declarations, so what the
// database holds is what this file says. src/db/triggers-drift.test.ts reads the triggers back from a
// migrated database on both dialects and compares them with the declarations.
//
// Changing or adding a trigger (docs/ARCHITECTURE.md, "Changes and reactions"): edit or add its
// declaration here, set `migration` to the new migration's name, and let that migration call
// installTriggers(db, dialect, "<its name>"). A fresh database runs the older migrations first, so a
// declaration is only ever installed by the migration it names (after the columns it reads exist).
import { type Kysely, sql } from "kysely";
import type { DatabaseChange } from "../domain/changes.ts";
import { ADMITTED_STATUSES } from "../domain/users.ts";
import type { DialectName } from "./dialect.ts";

/** A PostgreSQL trigger function: `RETURNS trigger`, plpgsql, search_path pinned, `RETURN NULL` at the end. */
export type TriggerFunction = {
  name: string;
  /** The statements before `RETURN NULL;`. */
  body: string;
  migration: string;
};

export type TriggerDeclaration = {
  name: string;
  table: string;
  /** The database changes it reacts to (domain/changes.ts DATABASE_CHANGES). */
  changes: readonly DatabaseChange[];
  /** What it keeps true. */
  purpose: string;
  /** The whole CREATE TRIGGER statement per dialect; absent = the dialect has no such trigger. */
  sqlite?: string;
  postgres?: string;
  /** The migration that installs this version of it (installTriggers). */
  migration: string;
};

/**
 * The "admitted" rule as SQL (a user whose credentials belong on the cores), from the one list in
 * domain/users.ts: `<status> IN ('active', 'on_hold')`. Triggers and repositories use this.
 */
export function admittedSql(column: string): string {
  return `${column} IN (${ADMITTED_STATUSES.map((status) => `'${status}'`).join(", ")})`;
}

const M = "0029_triggers_from_code";

const feedUser = (ref: string) => `INSERT INTO subscription_changes (user_id) VALUES (${ref});`;
const feedInbound = (ref: string) => `INSERT INTO subscription_changes (inbound_id) VALUES (${ref});`;
/** The inbounds whose hosts follow the health of server NEW (0022): their layouts change with it. */
const followingHealth = (isTrue: string) =>
  `SELECT DISTINCT h.server_inbound_id FROM inbound_hosts h JOIN server_inbounds i ON i.id = h.server_inbound_id WHERE i.server_id = NEW.id AND h.follows_health${isTrue}`;
/** OLD.c differs from NEW.c, per dialect, for each column, joined with OR. */
const differs = (dialect: DialectName, columns: readonly string[]) =>
  columns
    .map((c) => `OLD.${c} ${dialect === "sqlite" ? "IS NOT" : "IS DISTINCT FROM"} NEW.${c}`)
    .join(" OR ");
/** A PostgreSQL row trigger on UPDATE OF columns, WHEN one of them differs (or `when`). */
const pgRow = (name: string, table: string, columns: readonly string[], fn: string, when?: string) =>
  `CREATE TRIGGER ${name} AFTER UPDATE OF ${columns.join(", ")} ON ${table} FOR EACH ROW WHEN (${
    when ?? differs("postgres", columns)
  }) EXECUTE FUNCTION ${fn}()`;
/** A PostgreSQL statement trigger with transition tables. */
const pgStatement = (name: string, event: string, table: string, referencing: string, fn: string) =>
  `CREATE TRIGGER ${name} AFTER ${event} ON ${table} REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`;

const M24 = "0024_offline_servers";
/** Every inbound of server NEW: a server left out of /sub (or back) changes all their layouts (0024). */
const SERVER_INBOUNDS = "SELECT id FROM server_inbounds WHERE server_id = NEW.id";
/**
 * When server NEW's status became offline, and out of /sub no longer once it is anything else (0024).
 * An UPDATE of the row itself (not a BEFORE trigger): the left-out trigger is `UPDATE OF` its column,
 * and PostgreSQL does not fire those for what a BEFORE trigger changed.
 */
const offlineSince = (now: string, no: string) =>
  `UPDATE servers SET offline_since = CASE WHEN NEW.status = 'offline' THEN ${now} ELSE NULL END, left_out_of_sub = CASE WHEN NEW.status = 'offline' THEN left_out_of_sub ELSE ${no} END WHERE id = NEW.id;`;
const OFFLINE_SINCE_PG = offlineSince("now()", "false");

const LIFECYCLE_COLUMNS = ["status", "data_limit_bytes", "data_limit_reset", "expire_at", "last_reset_at"];
const GRANT_COLUMNS = ["user_id", "server_inbound_id", "credential", "is_active"];
const INBOUND_COLUMNS = ["link_params", "is_active"];

export const TRIGGER_FUNCTIONS: readonly TriggerFunction[] = [
  {
    name: "users_count_insert",
    body: "UPDATE row_counts SET n = n + (SELECT count(*) FROM inserted) WHERE table_name = 'users';",
    migration: M,
  },
  {
    name: "users_count_delete",
    body: "UPDATE row_counts SET n = n - (SELECT count(*) FROM deleted) WHERE table_name = 'users';",
    migration: M,
  },
  {
    name: "subscription_changes_users",
    body: "INSERT INTO subscription_changes (user_id) SELECT user_id FROM changed;",
    migration: M,
  },
  {
    name: "subscription_changes_user_ids",
    body: "INSERT INTO subscription_changes (user_id) SELECT id FROM changed;",
    migration: M,
  },
  {
    name: "subscription_changes_inbounds",
    body: "INSERT INTO subscription_changes (inbound_id) SELECT id FROM changed;",
    migration: M,
  },
  {
    // One function for the row triggers of three tables: what the row is decides which feed row.
    name: "subscription_changes_row",
    body: [
      "IF TG_TABLE_NAME = 'server_inbounds' THEN",
      `  ${feedInbound("NEW.id")}`,
      "ELSIF TG_TABLE_NAME = 'users' THEN",
      `  ${feedUser("NEW.id")}`,
      "ELSE",
      "  INSERT INTO subscription_changes (user_id) VALUES (OLD.user_id), (NEW.user_id);",
      "END IF;",
    ].join("\n"),
    migration: M,
  },
  {
    name: "subscription_changes_settings",
    body: "INSERT INTO subscription_changes (user_id, inbound_id) VALUES (NULL, NULL);",
    migration: M,
  },
  {
    name: "subscription_changes_hosts_new",
    body: "INSERT INTO subscription_changes (inbound_id) SELECT DISTINCT server_inbound_id FROM changed;",
    migration: M,
  },
  {
    name: "subscription_changes_hosts_old",
    body: "INSERT INTO subscription_changes (inbound_id) SELECT DISTINCT server_inbound_id FROM changed;",
    migration: M,
  },
  {
    name: "subscription_changes_hosts_both",
    body: "INSERT INTO subscription_changes (inbound_id) SELECT DISTINCT server_inbound_id FROM (SELECT server_inbound_id FROM changed UNION SELECT server_inbound_id FROM previous) AS both_sides;",
    migration: M,
  },
  {
    name: "subscription_changes_server_health",
    body: `INSERT INTO subscription_changes (inbound_id) ${followingHealth("")};`,
    migration: M,
  },
  {
    name: "servers_offline_since",
    body: OFFLINE_SINCE_PG,
    migration: M24,
  },
  {
    name: "subscription_changes_server_left_out",
    body: `INSERT INTO subscription_changes (inbound_id) ${SERVER_INBOUNDS};`,
    migration: M24,
  },
  {
    name: "users_admission_changed",
    body: "UPDATE user_access SET sync_state = 'pending', sync_error = NULL, sync_revision = sync_revision + 1 WHERE user_id = NEW.id AND is_active;",
    migration: M,
  },
];

const ADMISSION_SQLITE = `(${admittedSql("OLD.status")}) IS NOT (${admittedSql("NEW.status")})`;
const ADMISSION_PG = `(${admittedSql("OLD.status")}) IS DISTINCT FROM (${admittedSql("NEW.status")})`;

export const TRIGGERS: readonly TriggerDeclaration[] = [
  // Row counts: the user list's total without count(*) (0001).
  {
    name: "users_count_insert",
    table: "users",
    changes: ["user.created"],
    purpose: "users.count: row_counts follows inserted users",
    sqlite:
      "CREATE TRIGGER users_count_insert AFTER INSERT ON users BEGIN UPDATE row_counts SET n = n + 1 WHERE table_name = 'users'; END",
    postgres: pgStatement(
      "users_count_insert",
      "INSERT",
      "users",
      "NEW TABLE AS inserted",
      "users_count_insert",
    ),
    migration: M,
  },
  {
    name: "users_count_delete",
    table: "users",
    changes: ["user.deleted"],
    purpose: "users.count: row_counts follows deleted users",
    sqlite:
      "CREATE TRIGGER users_count_delete AFTER DELETE ON users BEGIN UPDATE row_counts SET n = n - 1 WHERE table_name = 'users'; END",
    postgres: pgStatement(
      "users_count_delete",
      "DELETE",
      "users",
      "OLD TABLE AS deleted",
      "users_count_delete",
    ),
    migration: M,
  },
  // SQLite's name search index (PostgreSQL: a trigram GIN index, no trigger) (0001).
  {
    name: "users_name_fts_insert",
    table: "users",
    changes: ["user.created"],
    purpose: "users.name search index follows inserted users",
    sqlite:
      "CREATE TRIGGER users_name_fts_insert AFTER INSERT ON users BEGIN INSERT INTO users_name_fts(rowid, name) VALUES (new.seq, new.name); END",
    migration: M,
  },
  {
    name: "users_name_fts_delete",
    table: "users",
    changes: ["user.deleted"],
    purpose: "users.name search index follows deleted users",
    sqlite:
      "CREATE TRIGGER users_name_fts_delete AFTER DELETE ON users BEGIN INSERT INTO users_name_fts(users_name_fts, rowid, name) VALUES ('delete', old.seq, old.name); END",
    migration: M,
  },
  {
    name: "users_name_fts_update",
    table: "users",
    changes: ["user.renamed"],
    purpose: "users.name search index follows renamed users",
    sqlite:
      "CREATE TRIGGER users_name_fts_update AFTER UPDATE OF name ON users BEGIN INSERT INTO users_name_fts(users_name_fts, rowid, name) VALUES ('delete', old.seq, old.name); INSERT INTO users_name_fts(rowid, name) VALUES (new.seq, new.name); END",
    migration: M,
  },
  // SQLite cannot add a NOT NULL column with a random default (0014): a new user without a token gets one.
  {
    name: "users_sub_token_default",
    table: "users",
    changes: ["user.created"],
    purpose: "a user inserted without sub_token gets a random one",
    sqlite:
      "CREATE TRIGGER users_sub_token_default AFTER INSERT ON users WHEN NEW.sub_token IS NULL BEGIN UPDATE users SET sub_token = lower(hex(randomblob(16))) WHERE id = NEW.id; END",
    migration: M,
  },
  // The admission rule (0015, 0019): crossing admitted ↔ not admitted marks the user's active grants
  // pending and bumps their revision, so the reconciler adds or removes the credentials on the cores.
  {
    name: "users_admission_changed",
    table: "users",
    changes: ["user.status"],
    purpose: "user.admission: the user's active grants become pending (provisioning)",
    sqlite: `CREATE TRIGGER users_admission_changed AFTER UPDATE OF status ON users WHEN ${ADMISSION_SQLITE} BEGIN UPDATE user_access SET sync_state = 'pending', sync_error = NULL, sync_revision = sync_revision + 1 WHERE user_id = NEW.id AND is_active = 1; END`,
    postgres: pgRow("users_admission_changed", "users", ["status"], "users_admission_changed", ADMISSION_PG),
    migration: M,
  },
  // A fair-use block starting or ending (0027): the same as an admission change, for
  // users.fair_use_blocked_until going from null to a time or back (access.repository.ts admits only
  // users not blocked).
  {
    name: "users_fair_use_block_changed",
    table: "users",
    changes: ["user.fair_use_block"],
    purpose:
      "user.admission: a fair-use block started or ended; the user's active grants become pending (provisioning)",
    sqlite:
      "CREATE TRIGGER users_fair_use_block_changed AFTER UPDATE OF fair_use_blocked_until ON users WHEN (OLD.fair_use_blocked_until IS NULL) IS NOT (NEW.fair_use_blocked_until IS NULL) BEGIN UPDATE user_access SET sync_state = 'pending', sync_error = NULL, sync_revision = sync_revision + 1 WHERE user_id = NEW.id AND is_active = 1; END",
    postgres: pgRow(
      "users_fair_use_block_changed",
      "users",
      ["fair_use_blocked_until"],
      "users_admission_changed",
      "(OLD.fair_use_blocked_until IS NULL) IS DISTINCT FROM (NEW.fair_use_blocked_until IS NULL)",
    ),
    migration: "0027_fair_use",
  },
  // The subscription change feed (0008 and after): a row in the same transaction as every write that
  // changes what GET /sub shows, whichever process wrote it; each instance's cache drops what changed.
  {
    name: "subscription_changes_user_renamed",
    table: "users",
    changes: ["user.renamed"],
    purpose: "subscription.user: a renamed user's subscription changes",
    sqlite: `CREATE TRIGGER subscription_changes_user_renamed AFTER UPDATE OF name ON users WHEN ${differs("sqlite", ["name"])} BEGIN ${feedUser("NEW.id")} END`,
    postgres: pgRow("subscription_changes_user_renamed", "users", ["name"], "subscription_changes_row"),
    migration: M,
  },
  {
    name: "subscription_changes_user_deleted",
    table: "users",
    changes: ["user.deleted"],
    purpose: "subscription.user: a deleted user's subscription goes",
    sqlite: `CREATE TRIGGER subscription_changes_user_deleted AFTER DELETE ON users BEGIN ${feedUser("OLD.id")} END`,
    postgres: pgStatement(
      "subscription_changes_user_deleted",
      "DELETE",
      "users",
      "OLD TABLE AS changed",
      "subscription_changes_user_ids",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_user_token",
    table: "users",
    changes: ["user.token"],
    purpose: "subscription.user: a rotated token drops the record kept under the old one",
    sqlite: `CREATE TRIGGER subscription_changes_user_token AFTER UPDATE OF sub_token ON users WHEN OLD.sub_token IS NOT NULL AND OLD.sub_token IS NOT NEW.sub_token BEGIN ${feedUser("NEW.id")} END`,
    postgres: pgRow("subscription_changes_user_token", "users", ["sub_token"], "subscription_changes_row"),
    migration: M,
  },
  {
    // used_bytes growing (every traffic collection) adds none; going down (a reset) does.
    name: "subscription_changes_user_lifecycle",
    table: "users",
    changes: ["user.status", "user.lifecycle"],
    purpose: "subscription.user: the lifecycle /sub shows (status, limit, expiry, a reset) changed",
    sqlite: `CREATE TRIGGER subscription_changes_user_lifecycle AFTER UPDATE OF ${[...LIFECYCLE_COLUMNS, "used_bytes"].join(", ")} ON users WHEN ${differs("sqlite", LIFECYCLE_COLUMNS)} OR NEW.used_bytes < OLD.used_bytes BEGIN ${feedUser("NEW.id")} END`,
    postgres: pgRow(
      "subscription_changes_user_lifecycle",
      "users",
      [...LIFECYCLE_COLUMNS, "used_bytes"],
      "subscription_changes_row",
      `${differs("postgres", LIFECYCLE_COLUMNS)} OR NEW.used_bytes < OLD.used_bytes`,
    ),
    migration: M,
  },
  {
    name: "subscription_changes_user_announce",
    table: "users",
    changes: ["user.announce"],
    purpose: "subscription.user: the user's own Announce header changed",
    sqlite: `CREATE TRIGGER subscription_changes_user_announce AFTER UPDATE OF announce ON users WHEN ${differs("sqlite", ["announce"])} BEGIN ${feedUser("NEW.id")} END`,
    postgres: pgRow("subscription_changes_user_announce", "users", ["announce"], "subscription_changes_row"),
    migration: M,
  },
  {
    name: "subscription_changes_user_device_limit",
    table: "users",
    changes: ["user.device_limit"],
    purpose: "subscription.user: the user's device limit changed (whether /sub checks their devices)",
    sqlite: `CREATE TRIGGER subscription_changes_user_device_limit AFTER UPDATE OF device_limit ON users WHEN ${differs("sqlite", ["device_limit"])} BEGIN ${feedUser("NEW.id")} END`,
    postgres: pgRow(
      "subscription_changes_user_device_limit",
      "users",
      ["device_limit"],
      "subscription_changes_row",
    ),
    migration: "0032_devices",
  },
  {
    name: "subscription_changes_grant_added",
    table: "user_access",
    changes: ["grant.added"],
    purpose: "subscription.user: a grant added",
    sqlite: `CREATE TRIGGER subscription_changes_grant_added AFTER INSERT ON user_access BEGIN ${feedUser("NEW.user_id")} END`,
    postgres: pgStatement(
      "subscription_changes_grant_added",
      "INSERT",
      "user_access",
      "NEW TABLE AS changed",
      "subscription_changes_users",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_grant_removed",
    table: "user_access",
    changes: ["grant.removed"],
    purpose: "subscription.user: a grant removed",
    sqlite: `CREATE TRIGGER subscription_changes_grant_removed AFTER DELETE ON user_access BEGIN ${feedUser("OLD.user_id")} END`,
    postgres: pgStatement(
      "subscription_changes_grant_removed",
      "DELETE",
      "user_access",
      "OLD TABLE AS changed",
      "subscription_changes_users",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_grant_changed",
    table: "user_access",
    changes: ["grant.changed"],
    purpose: "subscription.user: a grant's user, inbound, credential or activity changed",
    sqlite: `CREATE TRIGGER subscription_changes_grant_changed AFTER UPDATE OF ${GRANT_COLUMNS.join(", ")} ON user_access WHEN ${differs("sqlite", GRANT_COLUMNS)} BEGIN ${feedUser("OLD.user_id")} ${feedUser("NEW.user_id")} END`,
    postgres: pgRow(
      "subscription_changes_grant_changed",
      "user_access",
      GRANT_COLUMNS,
      "subscription_changes_row",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_inbound_changed",
    table: "server_inbounds",
    changes: ["inbound.changed"],
    purpose: "subscription.inbound: an inbound's link parameters or activity changed",
    sqlite: `CREATE TRIGGER subscription_changes_inbound_changed AFTER UPDATE OF ${INBOUND_COLUMNS.join(", ")} ON server_inbounds WHEN ${differs("sqlite", INBOUND_COLUMNS)} BEGIN ${feedInbound("NEW.id")} END`,
    postgres: pgRow(
      "subscription_changes_inbound_changed",
      "server_inbounds",
      INBOUND_COLUMNS,
      "subscription_changes_row",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_inbound_deleted",
    table: "server_inbounds",
    changes: ["inbound.deleted"],
    purpose: "subscription.inbound: an inbound deleted",
    sqlite: `CREATE TRIGGER subscription_changes_inbound_deleted AFTER DELETE ON server_inbounds BEGIN ${feedInbound("OLD.id")} END`,
    postgres: pgStatement(
      "subscription_changes_inbound_deleted",
      "DELETE",
      "server_inbounds",
      "OLD TABLE AS changed",
      "subscription_changes_inbounds",
    ),
    migration: M,
  },
  // Hosts (0022): per statement on PostgreSQL, so a reorder adds a row per statement.
  {
    name: "subscription_changes_host_added",
    table: "inbound_hosts",
    changes: ["host.added"],
    purpose: "subscription.inbound: a host added to an inbound",
    sqlite: `CREATE TRIGGER subscription_changes_host_added AFTER INSERT ON inbound_hosts BEGIN ${feedInbound("NEW.server_inbound_id")} END`,
    postgres: pgStatement(
      "subscription_changes_host_added",
      "INSERT",
      "inbound_hosts",
      "NEW TABLE AS changed",
      "subscription_changes_hosts_new",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_host_changed",
    table: "inbound_hosts",
    changes: ["host.changed"],
    purpose: "subscription.inbound: a host changed (both inbounds when it moved)",
    sqlite: `CREATE TRIGGER subscription_changes_host_changed AFTER UPDATE ON inbound_hosts BEGIN ${feedInbound("OLD.server_inbound_id")} ${feedInbound("NEW.server_inbound_id")} END`,
    postgres: pgStatement(
      "subscription_changes_host_changed",
      "UPDATE",
      "inbound_hosts",
      "NEW TABLE AS changed OLD TABLE AS previous",
      "subscription_changes_hosts_both",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_host_removed",
    table: "inbound_hosts",
    changes: ["host.removed"],
    purpose: "subscription.inbound: a host removed",
    sqlite: `CREATE TRIGGER subscription_changes_host_removed AFTER DELETE ON inbound_hosts BEGIN ${feedInbound("OLD.server_inbound_id")} END`,
    postgres: pgStatement(
      "subscription_changes_host_removed",
      "DELETE",
      "inbound_hosts",
      "OLD TABLE AS changed",
      "subscription_changes_hosts_old",
    ),
    migration: M,
  },
  {
    name: "subscription_changes_server_health",
    table: "servers",
    changes: ["server.status"],
    purpose: "subscription.inbound: a server's status changed; its inbounds with health-following hosts",
    sqlite: `CREATE TRIGGER subscription_changes_server_health AFTER UPDATE OF status ON servers WHEN ${differs("sqlite", ["status"])} BEGIN INSERT INTO subscription_changes (inbound_id) ${followingHealth(" = 1")}; END`,
    postgres: pgRow(
      "subscription_changes_server_health",
      "servers",
      ["status"],
      "subscription_changes_server_health",
    ),
    migration: M,
  },
  // Health in subscriptions (0024): since when a server is offline; its inbounds' layouts when it
  // leaves /sub or comes back (the subscription-health job sets the flag, coming back clears it).
  {
    name: "servers_offline_since",
    table: "servers",
    changes: ["server.status"],
    purpose: "servers.offline_since: a server's status changed to or from offline",
    sqlite: `CREATE TRIGGER servers_offline_since AFTER UPDATE OF status ON servers WHEN ${differs("sqlite", ["status"])} BEGIN ${offlineSince("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", "0")} END`,
    postgres: pgRow("servers_offline_since", "servers", ["status"], "servers_offline_since"),
    migration: M24,
  },
  {
    name: "subscription_changes_server_left_out",
    table: "servers",
    changes: ["server.left_out"],
    purpose: "subscription.inbound: a server left out of /sub or back; all its inbounds",
    sqlite: `CREATE TRIGGER subscription_changes_server_left_out AFTER UPDATE OF left_out_of_sub ON servers WHEN ${differs("sqlite", ["left_out_of_sub"])} BEGIN INSERT INTO subscription_changes (inbound_id) ${SERVER_INBOUNDS}; END`,
    postgres: pgRow(
      "subscription_changes_server_left_out",
      "servers",
      ["left_out_of_sub"],
      "subscription_changes_server_left_out",
    ),
    migration: M24,
  },
  // The settings (0014): a row with neither user nor inbound; each instance reads them again.
  {
    name: "subscription_changes_settings_insert",
    table: "subscription_settings",
    changes: ["settings.written"],
    purpose: "subscription.settings: the settings written",
    sqlite:
      "CREATE TRIGGER subscription_changes_settings_insert AFTER INSERT ON subscription_settings BEGIN INSERT INTO subscription_changes (user_id, inbound_id) VALUES (NULL, NULL); END",
    migration: M,
  },
  {
    name: "subscription_changes_settings_update",
    table: "subscription_settings",
    changes: ["settings.written"],
    purpose: "subscription.settings: the settings written",
    sqlite:
      "CREATE TRIGGER subscription_changes_settings_update AFTER UPDATE ON subscription_settings BEGIN INSERT INTO subscription_changes (user_id, inbound_id) VALUES (NULL, NULL); END",
    migration: M,
  },
  {
    name: "subscription_changes_settings",
    table: "subscription_settings",
    changes: ["settings.written"],
    purpose: "subscription.settings: the settings written",
    postgres:
      "CREATE TRIGGER subscription_changes_settings AFTER INSERT OR UPDATE ON subscription_settings FOR EACH STATEMENT EXECUTE FUNCTION subscription_changes_settings()",
    migration: M,
  },
];

/** The CREATE FUNCTION statement of a PostgreSQL trigger function. */
export function functionSql(fn: TriggerFunction): string {
  return `CREATE OR REPLACE FUNCTION ${fn.name}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
${fn.body}
RETURN NULL;
END $$`;
}

/** The declarations of one dialect: name → CREATE TRIGGER statement. */
export function triggersOf(dialect: DialectName): Map<string, TriggerDeclaration & { create: string }> {
  const out = new Map<string, TriggerDeclaration & { create: string }>();
  for (const trigger of TRIGGERS) {
    const create = trigger[dialect];
    if (create !== undefined) out.set(trigger.name, { ...trigger, create });
  }
  return out;
}

/**
 * Installs (drops if present, creates) the functions and triggers whose declaration names `migration`,
 * functions first. Called by that migration, inside its transaction.
 */
export async function installTriggers(db: Kysely<unknown>, dialect: DialectName, migration: string) {
  if (dialect === "postgres") {
    for (const fn of TRIGGER_FUNCTIONS.filter((f) => f.migration === migration)) {
      await sql.raw(functionSql(fn)).execute(db);
    }
  }
  for (const trigger of triggersOf(dialect).values()) {
    if (trigger.migration !== migration) continue;
    const on = dialect === "postgres" ? ` ON ${trigger.table}` : "";
    await sql.raw(`DROP TRIGGER IF EXISTS ${trigger.name}${on}`).execute(db);
    await sql.raw(trigger.create).execute(db);
  }
}
