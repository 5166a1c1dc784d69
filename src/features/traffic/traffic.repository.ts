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
import type { PendingRow } from "./fold-plan.ts";
import { type Bytes, decodeTraffic, encodeTraffic, type TrafficDeltas } from "./traffic.ts";
import { UsageRepository } from "./usage.repository.ts";
import { bucketStart } from "./usage.ts";

/**
 * Rows per statement of the fold's updates of users and user_access: each updated row is rewritten in
 * every index of its table (used_bytes is indexed, so never a HOT update on PostgreSQL). One server's
 * 20,000 users in one statement took 25–30 s on PostgreSQL at 1,000,000 users under load (bench:fleet,
 * 2026-12-03) and met the service's 30 s statement deadline; 5,000 keeps each well inside it, in the
 * same transaction, at the cost of a few more round trips.
 */
export const FOLD_ROWS_PER_STATEMENT = 5000;

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
  /** Users written, summed over the servers (once per server however many polls and hours). */
  users: number;
  /** on_hold users whose expiry clock these bytes started. */
  started: string[];
};

/** One server's deltas of one collection hour, at the latest of its polls' times. */
type Hour = { at: Date; deltas: TrafficDeltas };

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
      const [users = 0] = await repository.#write([{ serverId, hours: [{ at, deltas }] }], options.started);
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
      const hourly = parts.map(({ serverId, deltas }) => ({ serverId, hours: [{ at, deltas }] }));
      return new TrafficRepository(trx, this.dialect).#write(hourly, options.started);
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

  /** The journal's rows not folded yet (oldest first): sequence, server and size of the deltas' text. */
  async pending(): Promise<PendingRow[]> {
    const rows = await this.db
      .selectFrom("traffic_journal")
      // octet_length reads the length only (SQLite: not the overflow pages; PostgreSQL: not the TOAST).
      .select(["seq", "server_id", sql<number | string>`octet_length(deltas)`.as("bytes")])
      .orderBy("seq")
      .execute();
    return rows.map((row) => ({ seq: Number(row.seq), serverId: row.server_id, bytes: Number(row.bytes) }));
  }

  /**
   * Takes journal rows (`rows`: those of them still there; `only`: that one; `limit`: the oldest so
   * many; none: all), adds them to the totals and deletes them, in one transaction: all of it or
   * nothing. The rows are read and merged one at a time, per server and collection hour, so each user
   * is written once per hour bucket (the `users` row and the grant once in all) however many polls the
   * fold takes, at the latest of their times. On PostgreSQL the rows are claimed FOR UPDATE SKIP
   * LOCKED first: two instances folding at once take different rows (a row another fold holds is
   * left to it). TrafficService.fold chooses the batches (fold-plan.ts).
   */
  async fold(options: { rows?: readonly number[]; only?: number; limit?: number } = {}): Promise<Folded> {
    return this.db.transaction().execute(async (trx) => {
      const repository = new TrafficRepository(trx, this.dialect);
      const servers = new Map<string, Map<number, Hour>>();
      let taken = 0;
      for (const seq of await repository.#claim(options)) {
        const row = await trx
          .deleteFrom("traffic_journal")
          .where("seq", "=", seq)
          .returning(["server_id", "collected_at", "deltas"])
          .executeTakeFirst();
        if (row === undefined) continue;
        taken++;
        const at = new Date(read.timestamp(row.collected_at));
        const hour = bucketStart(at, "hour").getTime();
        let hours = servers.get(row.server_id);
        if (hours === undefined) {
          hours = new Map();
          servers.set(row.server_id, hours);
        }
        const held = hours.get(hour);
        hours.set(hour, {
          at: held === undefined || at > held.at ? at : held.at,
          deltas: decodeTraffic(row.deltas, held?.deltas),
        });
      }
      const started: string[] = [];
      const parts = [...servers].map(([serverId, hours]) => ({
        serverId,
        hours: [...hours].sort(([a], [b]) => a - b).map(([, hour]) => hour),
      }));
      const counts = parts.length === 0 ? [] : await repository.#write(parts, started);
      return { rows: taken, users: counts.reduce((sum, n) => sum + n, 0), started };
    });
  }

  /** The sequences a fold takes (in order); on PostgreSQL locked, skipping rows another fold holds. */
  async #claim(options: { rows?: readonly number[]; only?: number; limit?: number }): Promise<number[]> {
    if (options.rows !== undefined && options.rows.length === 0) return [];
    let query = this.db.selectFrom("traffic_journal").select("seq").orderBy("seq");
    if (options.rows !== undefined) query = query.where("seq", "in", [...options.rows]);
    if (options.only !== undefined) query = query.where("seq", "=", options.only);
    if (options.limit !== undefined) query = query.limit(options.limit);
    // SQLite: one writer at a time; this transaction holds the write lock from its first delete.
    if (this.dialect === "postgres") query = query.forUpdate().skipLocked();
    return (await query.execute()).map((row) => Number(row.seq));
  }

  /**
   * Adds each server's deltas (per collection hour) to the grants, users, inbounds and usage history.
   * The users are written once, in id order, before anything else (two transactions meet their
   * common users in the same order, and wait there rather than deadlock), at the latest hour's time;
   * the rows shared by server (inbounds, server buckets) come after, in server id order.
   * Returns the users written per server, in order.
   */
  async #write(
    parts: readonly { serverId: string; hours: readonly Hour[] }[],
    started: string[] | undefined,
  ): Promise<number[]> {
    const latest = new Date(
      Math.max(...parts.flatMap(({ hours }) => hours.map((hour) => hour.at.getTime()))),
    );
    const coefficients = await this.#coefficientsOf(parts.map((part) => part.serverId));
    const grants: [string, number, number][] = [];
    const counted = new Map<string, number>();
    const buckets = new Map<
      number,
      { at: Date; byServer: { serverId: string; byUser: Map<string, Bytes> }[] }
    >();
    const written: number[] = [];
    const inbounds = new Map<string, ReadonlyMap<string, Bytes>>();
    for (const { serverId, hours } of parts) {
      const total = hours.length === 1 ? (hours[0] as Hour).deltas : sumDeltas(hours);
      const coefficient = coefficients.get(serverId) ?? 1;
      const userOf = await this.#firstGrants(serverId, total.users, coefficient, grants, counted);
      written.push(new Set(userOf.values()).size);
      for (const { at, deltas } of hours) {
        const hour = bucketStart(at, "hour").getTime();
        const bucket = buckets.get(hour) ?? { at, byServer: [] };
        if (at > bucket.at) bucket.at = at;
        bucket.byServer.push({ serverId, byUser: byUserOf(deltas.users, userOf) });
        buckets.set(hour, bucket);
      }
      inbounds.set(serverId, total.inbounds);
    }
    if (counted.size > 0) await this.#countForUsers(counted, latest.toISOString(), started);
    for (const [serverId, tags] of [...inbounds].sort(byKey)) await this.#addInboundTraffic(serverId, tags);
    for (const part of chunks(grants, FOLD_ROWS_PER_STATEMENT)) {
      const input = jsonRows(this.dialect, { id: "uuid", up: "bigint", down: "bigint" }, part);
      await sql`update user_access set uplink_bytes = uplink_bytes + d.up, downlink_bytes = downlink_bytes + d.down
        from ${input} as d where user_access.id = d.id`.execute(this.db);
    }
    const usage = new UsageRepository(this.db, this.dialect);
    for (const [, { at, byServer }] of [...buckets].sort(([a], [b]) => a - b)) {
      await usage.addBucketsMany(
        byServer.sort((a, b) => byKey([a.serverId], [b.serverId])),
        at,
      );
    }
    return written;
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
   * each found email's user.
   */
  async #firstGrants(
    serverId: string,
    deltas: ReadonlyMap<string, Bytes>,
    coefficient: number,
    grants: [string, number, number][],
    counted: Map<string, number>,
  ): Promise<Map<string, string>> {
    const userOf = new Map<string, string>();
    if (deltas.size === 0) return userOf;
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
    for (const row of rows) {
      const bytes = deltas.get(row.proxy_user_id);
      if (userOf.has(row.proxy_user_id) || bytes === undefined) continue;
      userOf.set(row.proxy_user_id, row.user_id);
      grants.push([row.id, bytes.uplinkBytes, bytes.downlinkBytes]);
      const weighted = Math.round((bytes.uplinkBytes + bytes.downlinkBytes) * coefficient);
      counted.set(row.user_id, (counted.get(row.user_id) ?? 0) + weighted);
    }
    return userOf;
  }

  /**
   * used_bytes, lifetime_used_bytes, online_at, and the start of on-hold clocks: two statements per
   * FOLD_ROWS_PER_STATEMENT users, in id order (two transactions meet their common users in the same order).
   */
  async #countForUsers(counted: ReadonlyMap<string, number>, now: string, started: string[] | undefined) {
    const sorted = [...counted].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const dialect = this.dialect;
    for (const rows of chunks(sorted, FOLD_ROWS_PER_STATEMENT)) {
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

/** Bytes per user from bytes per email (emails of no grant left out). */
function byUserOf(
  deltas: ReadonlyMap<string, Bytes>,
  userOf: ReadonlyMap<string, string>,
): Map<string, Bytes> {
  const byUser = new Map<string, Bytes>();
  for (const [email, bytes] of deltas) {
    const userId = userOf.get(email);
    if (userId !== undefined) addBytes(byUser, userId, bytes);
  }
  return byUser;
}

/** One server's deltas over several collection hours, summed. */
function sumDeltas(hours: readonly Hour[]): TrafficDeltas {
  const total: TrafficDeltas = { users: new Map(), inbounds: new Map() };
  for (const { deltas } of hours) {
    for (const [email, bytes] of deltas.users) addBytes(total.users, email, bytes);
    for (const [tag, bytes] of deltas.inbounds) addBytes(total.inbounds, tag, bytes);
  }
  return total;
}

const byKey = ([a]: readonly [string, ...unknown[]], [b]: readonly [string, ...unknown[]]) =>
  a < b ? -1 : a > b ? 1 : 0;

/** One proxy user per user and server, so this only sums if that ever stops being true. */
function addBytes(into: Map<string, Bytes>, key: string, bytes: Bytes): void {
  const entry = into.get(key);
  if (entry === undefined) into.set(key, { ...bytes });
  else {
    entry.uplinkBytes += bytes.uplinkBytes;
    entry.downlinkBytes += bytes.downlinkBytes;
  }
}
