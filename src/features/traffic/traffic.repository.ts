// Traffic totals in SQL, written in batches: one SELECT and one UPDATE … CASE per 500 users, so a
// collection over thousands of active users costs a few dozen statements. A user's bytes on a
// server are added to their first grant there (oldest), so the sum over a user's grants is their
// total and the subscription reads it from the rows it already reads. The same bytes go into the
// usage history (usage.repository.ts) in the same transaction.
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";
import type { Bytes, TrafficDeltas } from "./traffic.ts";
import { UsageRepository } from "./usage.repository.ts";

export type ServerUsage = {
  server_id: string;
  server_name: string;
  uplink_bytes: number;
  downlink_bytes: number;
};

export class TrafficRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * All of it or nothing (a failed write is retried with the next deltas, never counted twice),
   * the usage history included: its buckets are those of `at`.
   */
  async addTraffic(serverId: string, deltas: TrafficDeltas, at: Date): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const repository = new TrafficRepository(trx, this.dialect);
      const byUser = await repository.#addUserTraffic(serverId, deltas.users);
      await repository.#addInboundTraffic(serverId, deltas.inbounds);
      await new UsageRepository(trx, this.dialect).addBuckets(serverId, byUser, at);
      return byUser.size;
    });
  }

  /**
   * Adds each email's bytes to the first grant of that proxy user on the server; unknown emails are
   * skipped. Returns the bytes written per user.
   */
  async #addUserTraffic(serverId: string, deltas: ReadonlyMap<string, Bytes>): Promise<Map<string, Bytes>> {
    const byUser = new Map<string, Bytes>();
    for (const part of chunks([...deltas.keys()])) {
      const rows = await this.db
        .selectFrom("user_access")
        .select(["id", "user_id", "proxy_user_id"])
        .where("server_id", "=", serverId)
        .where("proxy_user_id", "in", part)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      const targets = new Map<string, Bytes>();
      const seen = new Set<string>();
      for (const row of rows) {
        const bytes = deltas.get(row.proxy_user_id);
        if (seen.has(row.proxy_user_id) || bytes === undefined) continue;
        seen.add(row.proxy_user_id);
        targets.set(row.id, bytes);
        addBytes(byUser, row.user_id, bytes);
      }
      if (targets.size === 0) continue;
      await this.db
        .updateTable("user_access")
        .set({
          uplink_bytes: sql`uplink_bytes + ${caseOf("id", targets, "uplinkBytes")}`,
          downlink_bytes: sql`downlink_bytes + ${caseOf("id", targets, "downlinkBytes")}`,
        })
        .where("id", "in", [...targets.keys()])
        .execute();
    }
    return byUser;
  }

  async #addInboundTraffic(serverId: string, deltas: ReadonlyMap<string, Bytes>): Promise<void> {
    for (const part of chunks([...deltas.keys()])) {
      const targets = new Map<string, Bytes>();
      for (const tag of part) {
        const bytes = deltas.get(tag);
        if (bytes !== undefined) targets.set(tag, bytes);
      }
      await this.db
        .updateTable("server_inbounds")
        .set({
          uplink_bytes: sql`uplink_bytes + ${caseOf("tag", targets, "uplinkBytes")}`,
          downlink_bytes: sql`downlink_bytes + ${caseOf("tag", targets, "downlinkBytes")}`,
        })
        .where("server_id", "=", serverId)
        .where("tag", "in", part)
        .execute();
    }
  }

  /** A user's totals per server (sums over the user's grants there). */
  async usageOfUser(userId: string): Promise<ServerUsage[]> {
    const rows = await this.db
      .selectFrom("user_access as a")
      .innerJoin("servers as s", "s.id", "a.server_id")
      .select((eb) => [
        "a.server_id",
        "s.name as server_name",
        eb.fn.sum<number | string>("a.uplink_bytes").as("uplink_bytes"),
        eb.fn.sum<number | string>("a.downlink_bytes").as("downlink_bytes"),
      ])
      .where("a.user_id", "=", userId)
      .groupBy(["a.server_id", "s.name"])
      .orderBy("s.name")
      .execute();
    return rows.map((row) => ({
      server_id: row.server_id,
      server_name: row.server_name,
      uplink_bytes: read.bigint(row.uplink_bytes),
      downlink_bytes: read.bigint(row.downlink_bytes),
    }));
  }
}

/** `CASE column WHEN k THEN v … ELSE 0 END`, values cast to bigint (PostgreSQL would guess int4). */
function caseOf(column: string, values: ReadonlyMap<string, Bytes>, field: keyof Bytes): RawBuilder<number> {
  const whens = [...values].map(([key, bytes]) => sql`when ${key} then cast(${bytes[field]} as bigint)`);
  return sql<number>`(case ${sql.ref(column)} ${sql.join(whens, sql` `)} else 0 end)`;
}

/** One proxy user per user and server, so this only sums if that ever stops being true. */
function addBytes(into: Map<string, Bytes>, key: string, bytes: Bytes): void {
  const entry = into.get(key);
  if (entry === undefined) into.set(key, { ...bytes });
  else {
    entry.uplinkBytes += bytes.uplinkBytes;
    entry.downlinkBytes += bytes.downlinkBytes;
  }
}
