// Health in subscriptions (issue 47, layer 7): a server offline for longer than the subscription
// setting's N minutes is left out of every /sub, so clients stop trying a dead node. The database
// keeps when a server went offline (`offline_since`, set by a trigger whichever code path wrote the
// status); the subscription-health job sets `left_out_of_sub` once the setting's N minutes have passed;
// the server coming back (any status but offline) clears both in the same transaction. A change of
// `left_out_of_sub` adds a subscription_changes row for every inbound of the server in the same
// transaction (migration 0008's feed, as 0022 does for hosts that follow their server's health), so
// the subscription cache drops exactly those inbounds' layouts and /sub's fast path stays fast. The
// triggers are declared in db/triggers.ts (migration "0024_offline_servers").
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";
import { installTriggers } from "../triggers.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema.alterTable("servers").addColumn("offline_since", t.timestamp).execute();
  await db.schema
    .alterTable("servers")
    .addColumn("left_out_of_sub", t.boolean, (c) => c.notNull().defaultTo(dialect === "postgres" ? false : 0))
    .execute();
  // Servers already offline: counted from now (when they went offline was not kept before).
  const now = dialect === "postgres" ? sql`now()` : sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
  await sql`UPDATE servers SET offline_since = ${now} WHERE status = 'offline'`.execute(db);
  await installTriggers(db, dialect, "0024_offline_servers");
}
