// Traffic totals in SQL, set-based: per server and collection one SELECT finds each email's grants
// and one UPDATE … FROM adds the bytes, the rows passed as one JSON parameter (db/dialect.ts
// jsonRows), whatever the number of users. A user's bytes on a server are added to their first grant
// there (oldest), so the sum over a user's grants is their total and the subscription reads it from
// the rows it already reads. The same bytes go into the usage history (usage.repository.ts) in the
// same transaction.
// In the same transaction each user's bytes × the server's usage_coefficient go to users.used_bytes
// (this period) and lifetime_used_bytes, online_at becomes now, and an on_hold user's expiry clock
// starts (status active, expire_at = now + on_hold_duration_seconds): two more statements, whatever
// the number of users (the lifecycle job judges the new numbers, docs/LIFECYCLE.md).
// A collection does not write these totals itself: it journals what it read (journal(): one row per
// server in traffic_journal, migration 0034, a few inserts whatever the number of users), and fold()
// adds journaled rows to the totals through the same set-based write and deletes them in that
// transaction, so each is counted exactly once, a crash or restart in between included.
// Measured by `npm run bench:traffic` (docs/benchmarks/traffic.md).
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { CoreTraffic } from "../../cores/core-types.ts";
import { type DialectName, jsonRows, plusSeconds, read, typedValue } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";
import { type Bytes, decodeTraffic, encodeTraffic, type TrafficDeltas } from "./traffic.ts";
import { ROWS_PER_STATEMENT, UsageRepository } from "./usage.repository.ts";
import { bucketStart } from "./usage.ts";

export type ServerUsage = {
  server_id: string;
  server_name: string;
  uplink_bytes: number;
  downlink_bytes: number;
};

export type AddTrafficOptions = {
  /** The collection's time (online_at, the start of on-hold clocks); default: now. */
  now?: Date;
  /** Filled with the ids of on_hold users whose clock this traffic started. */
  started?: string[];
  /**
   * A node agent's batch (its journal's epoch and sequence): counted only if this receipt is new,
   * in the same transaction, so a batch delivered again after a lost acknowledgement adds nothing.
   */
  receipt?: { epoch: string; seq: number };
};

/** What one fold added to the totals. */
export type Folded = {
  /** Journal rows folded (and deleted). */
  rows: number;
  /** Users written, summed over the servers of each collection hour. */
  users: number;
  /** on_hold users whose expiry clock these bytes started. */
  started: string[];
};

/** Journal rows per fold transaction: a few collections of a 50-server fleet. */
export const FOLD_ROWS = 200;

export class TrafficRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * All of it or nothing (a failed write is retried with the next deltas, never counted twice),
   * the usage history included: its buckets are those of `options.now`.
   */
  async addTraffic(
    serverId: string,
    deltas: TrafficDeltas,
    options: AddTrafficOptions = {},
  ): Promise<number> {
    const at = options.now ?? new Date();
    return this.db.transaction().execute(async (trx) => {
      const repository = new TrafficRepository(trx, this.dialect);
      const { receipt } = options;
      if (receipt !== undefined && !(await repository.#receive(serverId, receipt, at.toISOString()))) {
        return 0;
      }
      const [users = 0] = await repository.#write([{ serverId, deltas }], at, options.started);
      return users;
    });
  }

  /**
   * Several servers' deltas of one collection in one transaction, all or nothing: a user with
   * traffic on several servers is updated once, and each page of users and grants is written once
   * per collection instead of once per server. Returns the users written per server, in order.
   */
  async addTrafficMany(
    parts: readonly { serverId: string; deltas: TrafficDeltas }[],
    options: Omit<AddTrafficOptions, "receipt"> = {},
  ): Promise<number[]> {
    const at = options.now ?? new Date();
    return this.db.transaction().execute(async (trx) => {
      return new TrafficRepository(trx, this.dialect).#write(parts, at, options.started);
    });
  }

  /**
   * Journals one collection's deltas (per server) in one transaction: durable once this returns,
   * counted in the totals when fold() takes them. A few inserts of JSON text, whatever the users.
   */
  async journal(parts: readonly { serverId: string; traffic: CoreTraffic }[], at: Date): Promise<void> {
    const collectedAt = at.toISOString();
    await this.db.transaction().execute(async (trx) => {
      for (const part of chunks([...parts], 10)) {
        await trx
          .insertInto("traffic_journal")
          .values(
            part.map(({ serverId, traffic }) => ({
              server_id: serverId,
              collected_at: collectedAt,
              deltas: encodeTraffic(traffic),
            })),
          )
          .execute();
      }
    });
  }

  /** The journal's rows not folded yet (oldest first): sequence and server. */
  async pending(): Promise<{ seq: number; serverId: string }[]> {
    const rows = await this.db
      .selectFrom("traffic_journal")
      .select(["seq", "server_id"])
      .orderBy("seq")
      .execute();
    return rows.map((row) => ({ seq: Number(row.seq), serverId: row.server_id }));
  }

  /**
   * Takes the oldest journal rows (at most `limit`, or only row `only`), adds them to the totals and
   * deletes them, in one transaction: all of it or nothing. Rows of the same collection hour are
   * merged per server and written together (TrafficRepository.addTrafficMany's write, at the latest
   * of their times), so a fold that fell behind writes each user once per hour, not once per poll.
   * On PostgreSQL the rows are taken with SKIP LOCKED: two instances folding at once take different rows.
   */
  async fold(options: { limit?: number; only?: number } = {}): Promise<Folded> {
    const limit = options.limit ?? FOLD_ROWS;
    return this.db.transaction().execute(async (trx) => {
      const repository = new TrafficRepository(trx, this.dialect);
      const taken = await repository.#take(limit, options.only);
      const groups = new Map<number, { at: Date; servers: Map<string, TrafficDeltas> }>();
      for (const row of taken) {
        const at = new Date(read.timestamp(row.collected_at));
        const hour = bucketStart(at, "hour").getTime();
        let group = groups.get(hour);
        if (group === undefined) {
          group = { at, servers: new Map() };
          groups.set(hour, group);
        }
        if (at > group.at) group.at = at;
        group.servers.set(row.server_id, decodeTraffic(row.deltas, group.servers.get(row.server_id)));
      }
      const started: string[] = [];
      let users = 0;
      for (const [, group] of [...groups].sort(([a], [b]) => a - b)) {
        const parts = [...group.servers].map(([serverId, deltas]) => ({ serverId, deltas }));
        for (const count of await repository.#write(parts, group.at, started)) users += count;
      }
      return { rows: taken.length, users, started };
    });
  }

  /** Deletes and returns the oldest journal rows (or row `only`), in sequence order. */
  async #take(
    limit: number,
    only: number | undefined,
  ): Promise<{ seq: number | string; server_id: string; collected_at: string | Date; deltas: string }[]> {
    if (this.dialect === "postgres") {
      const chosen =
        only === undefined
          ? sql`select seq from traffic_journal order by seq limit ${limit} for update skip locked`
          : sql`select seq from traffic_journal where seq = ${only} for update skip locked`;
      const { rows } = await sql<{ seq: string; server_id: string; collected_at: Date; deltas: string }>`
        delete from traffic_journal where seq in (${chosen})
        returning seq, server_id, collected_at, deltas`.execute(this.db);
      return rows.sort((a, b) => Number(a.seq) - Number(b.seq));
    }
    // SQLite: one writer at a time, and this transaction holds the write lock from its first write.
    let query = this.db
      .selectFrom("traffic_journal")
      .select(["seq", "server_id", "collected_at", "deltas"])
      .orderBy("seq")
      .limit(limit);
    if (only !== undefined) query = query.where("seq", "=", only);
    const rows = await query.execute();
    const last = rows.at(-1);
    if (last === undefined) return [];
    const first = rows[0] as (typeof rows)[0];
    await this.db
      .deleteFrom("traffic_journal")
      .where("seq", ">=", first.seq)
      .where("seq", "<=", last.seq)
      .execute();
    return rows;
  }

  async #write(
    parts: readonly { serverId: string; deltas: TrafficDeltas }[],
    at: Date,
    started: string[] | undefined,
  ): Promise<number[]> {
    const now = at.toISOString();
    const coefficients = await this.#coefficientsOf(parts.map((part) => part.serverId));
    const grants: [string, number, number][] = [];
    const counted = new Map<string, number>();
    const byServer: { serverId: string; byUser: Map<string, Bytes> }[] = [];
    for (const { serverId, deltas } of parts) {
      const coefficient = coefficients.get(serverId) ?? 1;
      const byUser = await this.#firstGrants(serverId, deltas.users, coefficient, grants, counted);
      byServer.push({ serverId, byUser });
    }
    if (counted.size > 0) await this.#countForUsers(counted, now, started);
    for (const part of chunks(grants, ROWS_PER_STATEMENT)) {
      const input = jsonRows(this.dialect, { id: "uuid", up: "bigint", down: "bigint" }, part);
      await sql`update user_access set uplink_bytes = uplink_bytes + d.up, downlink_bytes = downlink_bytes + d.down
        from ${input} as d where user_access.id = d.id`.execute(this.db);
    }
    for (const { serverId, deltas } of parts) await this.#addInboundTraffic(serverId, deltas.inbounds);
    await new UsageRepository(this.db, this.dialect).addBucketsMany(byServer, at);
    return byServer.map(({ byUser }) => byUser.size);
  }

  /** True when the receipt was not there yet (and now is). */
  async #receive(serverId: string, receipt: { epoch: string; seq: number }, now: string): Promise<boolean> {
    const result = await this.db
      .insertInto("node_traffic_receipts")
      .values({ server_id: serverId, epoch: receipt.epoch, seq: receipt.seq, received_at: now })
      .onConflict((oc) => oc.columns(["server_id", "epoch", "seq"]).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async #coefficientsOf(serverIds: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom("servers")
      .select(["id", "usage_coefficient"])
      .where("id", "in", serverIds)
      .execute();
    return new Map(rows.map((row) => [row.id, Number(row.usage_coefficient)]));
  }

  /**
   * Finds the first grant of each email's proxy user on the server (one SELECT; unknown emails are
   * skipped) and adds to `grants` its bytes and to `counted` the user's bytes × coefficient. Returns
   * the bytes per user on this server.
   */
  async #firstGrants(
    serverId: string,
    deltas: ReadonlyMap<string, Bytes>,
    coefficient: number,
    grants: [string, number, number][],
    counted: Map<string, number>,
  ): Promise<Map<string, Bytes>> {
    const byUser = new Map<string, Bytes>();
    if (deltas.size === 0) return byUser;
    const emails = jsonRows(
      this.dialect,
      { email: "text" },
      [...deltas.keys()].map((email) => [email]),
    );
    const rows = await this.db
      .selectFrom("user_access")
      .select(["id", "user_id", "proxy_user_id"])
      .where("server_id", "=", serverId)
      .where("proxy_user_id", "in", sql<string>`(select r.email from ${emails} as r)`)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    const seen = new Set<string>();
    for (const row of rows) {
      const bytes = deltas.get(row.proxy_user_id);
      if (seen.has(row.proxy_user_id) || bytes === undefined) continue;
      seen.add(row.proxy_user_id);
      grants.push([row.id, bytes.uplinkBytes, bytes.downlinkBytes]);
      addBytes(byUser, row.user_id, bytes);
      const weighted = Math.round((bytes.uplinkBytes + bytes.downlinkBytes) * coefficient);
      counted.set(row.user_id, (counted.get(row.user_id) ?? 0) + weighted);
    }
    return byUser;
  }

  /**
   * used_bytes, lifetime_used_bytes, online_at, and the start of on-hold clocks: two statements per
   * ROWS_PER_STATEMENT users, in id order (two transactions meet their common users in the same order).
   */
  async #countForUsers(counted: ReadonlyMap<string, number>, now: string, started: string[] | undefined) {
    const sorted = [...counted].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const dialect = this.dialect;
    for (const rows of chunks(sorted, ROWS_PER_STATEMENT)) {
      const ids = jsonRows(
        dialect,
        { id: "uuid" },
        rows.map(([id]) => [id]),
      );
      const clocks = await this.db
        .updateTable("users")
        .set({ status: "active", expire_at: plusSeconds(dialect, now, "on_hold_duration_seconds") })
        .where("status", "=", "on_hold")
        .where("id", "in", sql<string>`(select r.id from ${ids} as r)`)
        .returning("id")
        .execute();
      started?.push(...clocks.map((row) => row.id));
      const input = jsonRows(dialect, { id: "uuid", bytes: "bigint" }, rows);
      await sql`update users set used_bytes = used_bytes + d.bytes,
          lifetime_used_bytes = lifetime_used_bytes + d.bytes, online_at = ${typedValue(dialect, now, "timestamp")}
        from ${input} as d where users.id = d.id`.execute(this.db);
    }
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
