// Health in subscriptions (issue 47, layer 7): a server offline for longer than the subscription
// setting's N minutes is left out of every /sub, so clients stop trying a dead node. The database
// keeps when a server went offline (`offline_since`, set by a trigger whichever code path wrote the
// status); the subscription-health job sets `left_out_of_sub` once the setting's N minutes have passed;
// the server coming back (any status but offline) clears both in the same statement. A change of
// `left_out_of_sub` adds a subscription_changes row for every inbound of the server in the same
// transaction (migration 0008's feed, as 0022 does for hosts that follow their server's health), so
// the subscription cache drops exactly those inbounds' layouts and /sub's fast path stays fast.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema.alterTable("servers").addColumn("offline_since", t.timestamp).execute();
  await db.schema
    .alterTable("servers")
    .addColumn("left_out_of_sub", t.boolean, (c) => c.notNull().defaultTo(dialect === "postgres" ? false : 0))
    .execute();
  if (dialect === "sqlite") {
    const now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
    // Servers already offline: counted from now (when they went offline was not kept before).
    await sql`UPDATE servers SET offline_since = ${sql.raw(now)} WHERE status = 'offline'`.execute(db);
    await sql`CREATE TRIGGER servers_offline_since_added AFTER INSERT ON servers
      WHEN NEW.status = 'offline'
      BEGIN UPDATE servers SET offline_since = ${sql.raw(now)} WHERE id = NEW.id; END`.execute(db);
    await sql`CREATE TRIGGER servers_offline_since AFTER UPDATE OF status ON servers
      WHEN OLD.status IS NOT NEW.status
      BEGIN UPDATE servers SET
        offline_since = CASE WHEN NEW.status = 'offline' THEN ${sql.raw(now)} ELSE NULL END,
        left_out_of_sub = CASE WHEN NEW.status = 'offline' THEN left_out_of_sub ELSE 0 END
      WHERE id = NEW.id; END`.execute(db);
    await sql`CREATE TRIGGER subscription_changes_server_left_out AFTER UPDATE OF left_out_of_sub ON servers
      WHEN OLD.left_out_of_sub IS NOT NEW.left_out_of_sub
      BEGIN INSERT INTO subscription_changes (inbound_id)
        SELECT id FROM server_inbounds WHERE server_id = NEW.id; END`.execute(db);
    return;
  }
  await sql`UPDATE servers SET offline_since = now() WHERE status = 'offline'`.execute(db);
  await sql`CREATE FUNCTION servers_offline_since() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$ BEGIN
      IF NEW.status = 'offline' THEN
        IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'offline' THEN NEW.offline_since := now(); END IF;
      ELSE
        NEW.offline_since := NULL;
        NEW.left_out_of_sub := false;
      END IF;
      RETURN NEW; END $$`.execute(db);
  await sql`CREATE TRIGGER servers_offline_since_added BEFORE INSERT ON servers
    FOR EACH ROW EXECUTE FUNCTION servers_offline_since()`.execute(db);
  await sql`CREATE TRIGGER servers_offline_since BEFORE UPDATE OF status ON servers
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION servers_offline_since()`.execute(db);
  // No column list: a column-specific trigger does not see what a BEFORE trigger changed.
  await sql`CREATE FUNCTION subscription_changes_server_left_out() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$ BEGIN INSERT INTO subscription_changes (inbound_id)
      SELECT id FROM server_inbounds WHERE server_id = NEW.id; RETURN NULL; END $$`.execute(db);
  await sql`CREATE TRIGGER subscription_changes_server_left_out AFTER UPDATE ON servers
    FOR EACH ROW WHEN (OLD.left_out_of_sub IS DISTINCT FROM NEW.left_out_of_sub)
    EXECUTE FUNCTION subscription_changes_server_left_out()`.execute(db);
}
