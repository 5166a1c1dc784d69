// Hosts (issue 48): an inbound reached through other addresses (a CDN domain, a bare IP, another SNI)
// is several entries in a subscription, one per enabled host, in `position` order. No host: the one
// implicit host of the inbound's own link parameters. A host change is a change of what GET /sub
// shows, so it adds a subscription_changes row for its inbound in the same transaction (migration
// 0008's feed), whichever code path or process wrote it; the cache drops the inbound's layouts.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("inbound_hosts")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("server_inbound_id", t.uuid, (c) =>
      c.notNull().references("server_inbounds.id").onDelete("cascade"),
    )
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("address", "text")
    .addColumn("port", "integer")
    .addColumn("remark", "text")
    .addColumn("sni", t.json, (c) => c.notNull())
    .addColumn("host", t.json, (c) => c.notNull())
    .addColumn("path", "text")
    .addColumn("alpn", t.json)
    .addColumn("fingerprint", "text")
    .addColumn("security", "text", (c) => c.notNull())
    .addColumn("allow_insecure", t.boolean, (c) => c.notNull())
    .addColumn("mux", t.json)
    .addColumn("fragment", t.json)
    .addColumn("noise", t.json)
    .addColumn("is_disabled", t.boolean, (c) => c.notNull())
    .addColumn("exclude_from", t.json, (c) => c.notNull())
    .addColumn("follows_health", t.boolean, (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("inbound_hosts_inbound_position")
    .on("inbound_hosts")
    .columns(["server_inbound_id", "position"])
    .execute();
  if (dialect === "sqlite") {
    const row = (ref: "NEW" | "OLD") =>
      sql.raw(`INSERT INTO subscription_changes (inbound_id) VALUES (${ref}.server_inbound_id);`);
    await sql`CREATE TRIGGER subscription_changes_host_added AFTER INSERT ON inbound_hosts
      BEGIN ${row("NEW")} END`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_host_changed AFTER UPDATE ON inbound_hosts
      BEGIN ${row("OLD")} ${row("NEW")} END`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_host_removed AFTER DELETE ON inbound_hosts
      BEGIN ${row("OLD")} END`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_server_health AFTER UPDATE OF status ON servers
      WHEN OLD.status IS NOT NEW.status
      BEGIN INSERT INTO subscription_changes (inbound_id) ${sql.raw(FOLLOWING)}; END`.execute(db);
    return;
  }
  // Per statement, like the grants' triggers of 0008: a reorder (one UPDATE per host in one
  // transaction) adds a row per statement, a cascade from a deleted inbound one in all.
  const fn = (name: string, from: string) =>
    sql`CREATE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT
      AS $$ BEGIN INSERT INTO subscription_changes (inbound_id)
        SELECT DISTINCT server_inbound_id FROM ${sql.raw(from)}; RETURN NULL; END $$`.execute(db);
  await fn("subscription_changes_hosts_new", "changed");
  await fn("subscription_changes_hosts_old", "changed");
  await fn(
    "subscription_changes_hosts_both",
    "(SELECT server_inbound_id FROM changed UNION SELECT server_inbound_id FROM previous) AS both_sides",
  );
  const statement = (name: string, event: string, tables: string, fnName: string) =>
    sql`CREATE TRIGGER ${sql.raw(name)} AFTER ${sql.raw(event)} ON inbound_hosts
      REFERENCING ${sql.raw(tables)} FOR EACH STATEMENT EXECUTE FUNCTION ${sql.raw(fnName)}()`.execute(db);
  await statement(
    "subscription_changes_host_added",
    "INSERT",
    "NEW TABLE AS changed",
    "subscription_changes_hosts_new",
  );
  await statement(
    "subscription_changes_host_changed",
    "UPDATE",
    "NEW TABLE AS changed OLD TABLE AS previous",
    "subscription_changes_hosts_both",
  );
  await statement(
    "subscription_changes_host_removed",
    "DELETE",
    "OLD TABLE AS changed",
    "subscription_changes_hosts_old",
  );
  await sql`CREATE FUNCTION subscription_changes_server_health() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$ BEGIN INSERT INTO subscription_changes (inbound_id)
      ${sql.raw(FOLLOWING.replace("= 1", ""))}; RETURN NULL; END $$`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_server_health AFTER UPDATE OF status ON servers
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION subscription_changes_server_health()`.execute(db);
}

/**
 * A server's status changing changes the subscriptions of its inbounds that have hosts following its
 * health (left out while it is offline or in error): those inbounds, once each.
 */
const FOLLOWING = `SELECT DISTINCT h.server_inbound_id FROM inbound_hosts h
  JOIN server_inbounds i ON i.id = h.server_inbound_id WHERE i.server_id = NEW.id AND h.follows_health = 1`;
