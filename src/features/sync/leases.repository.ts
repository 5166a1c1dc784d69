// Server leases in SQL: one row per server naming the instance that reconciles it and until when.
// Taking or renewing is one conditional upsert (the row is ours, or free, or expired), the same
// statement on PostgreSQL and SQLite; expiry uses the instances' clocks, like certificate renewals.
// Beside them, each instance's heartbeat (panel_instances, migration 0035): who is alive to share with.
import type { Kysely } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";

export type LeaseRow = { serverId: string; holder: string; expiresAt: string };

export class LeasesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Renews ours and takes free or expired ones among `serverIds`; the ids this holder now holds. */
  async claim(
    serverIds: readonly string[],
    holder: string,
    now: string,
    expiresAt: string,
  ): Promise<string[]> {
    const held: string[] = [];
    for (const part of chunks(serverIds)) {
      const existing = await this.db.selectFrom("servers").select("id").where("id", "in", part).execute();
      if (existing.length === 0) continue;
      const rows = await this.db
        .insertInto("server_leases")
        .values(existing.map((row) => ({ server_id: row.id, holder, expires_at: expiresAt })))
        .onConflict((oc) =>
          oc
            .column("server_id")
            .doUpdateSet((eb) => ({
              holder: eb.ref("excluded.holder"),
              expires_at: eb.ref("excluded.expires_at"),
            }))
            .where((eb) =>
              eb.or([eb("server_leases.holder", "=", holder), eb("server_leases.expires_at", "<", now)]),
            ),
        )
        .returning("server_id")
        .execute();
      held.push(...rows.map((row) => row.server_id));
    }
    return held;
  }

  /** A clean shutdown (or a handover) gives servers to the others at once instead of after the lease time. */
  async release(holder: string, serverIds?: readonly string[]): Promise<void> {
    if (serverIds !== undefined && serverIds.length === 0) return;
    let query = this.db.deleteFrom("server_leases").where("holder", "=", holder);
    if (serverIds !== undefined) query = query.where("server_id", "in", [...serverIds]);
    await query.execute();
  }

  /**
   * Renews this instance's heartbeat and reads who shares the servers now: the names whose
   * heartbeat has not expired (this one included) and every server id.
   */
  async announce(
    name: string,
    now: string,
    expiresAt: string,
  ): Promise<{ instances: string[]; serverIds: string[] }> {
    await this.db
      .insertInto("panel_instances")
      .values({ name, expires_at: expiresAt })
      .onConflict((oc) => oc.column("name").doUpdateSet({ expires_at: expiresAt }))
      .execute();
    const [instances, servers] = await Promise.all([
      this.db.selectFrom("panel_instances").select(["name", "expires_at"]).execute(),
      this.db.selectFrom("servers").select("id").execute(),
    ]);
    const live = instances.filter((row) => read.timestamp(row.expires_at) >= now).map((row) => row.name);
    // Heartbeats of instances that died (no clean leave) would otherwise stay for good.
    if (live.length < instances.length) {
      await this.db.deleteFrom("panel_instances").where("expires_at", "<", now).execute();
    }
    return { instances: live, serverIds: servers.map((row) => row.id) };
  }

  /** On shutdown: the others stop counting this instance at once. Rows of instances that died go too. */
  async leave(name: string, now: string): Promise<void> {
    await this.db
      .deleteFrom("panel_instances")
      .where((eb) => eb.or([eb("name", "=", name), eb("expires_at", "<", now)]))
      .execute();
  }

  async find(serverId: string): Promise<LeaseRow | undefined> {
    const row = await this.db
      .selectFrom("server_leases")
      .selectAll()
      .where("server_id", "=", serverId)
      .executeTakeFirst();
    return row && { serverId: row.server_id, holder: row.holder, expiresAt: read.timestamp(row.expires_at) };
  }
}
