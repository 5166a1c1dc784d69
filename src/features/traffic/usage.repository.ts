// Usage history in SQL (migration 0016). A collection adds its deltas with one upsert per table (per
// 50,000 user rows), the user rows of all its servers passed as one JSON parameter (db/dialect.ts
// jsonRows), and one upsert per server and server table. Reads are one indexed range each; pruning is one range per server.
import { type Kysely, sql } from "kysely";
import { type DialectName, jsonRows, read, typedValue } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";
import type { Bytes } from "./traffic.ts";
import { bucketStart, type Granularity } from "./usage.ts";

export type StoredBucket = { start: string; uplinkBytes: number; downlinkBytes: number };
export type StoredServerBucket = StoredBucket & { serverId: string };

/** Rows per set-based statement (here and traffic.repository.ts): one JSON parameter of a few MB at most. */
export const ROWS_PER_STATEMENT = 50_000;

const USER_TABLES = { hour: "user_usage_hourly", day: "user_usage_daily" } as const;
const SERVER_TABLES = { hour: "server_usage_hourly", day: "server_usage_daily" } as const;

export class UsageRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** Adds one collection's bytes per user (on one server) to the hourly and daily buckets of `at`. */
  async addBuckets(serverId: string, byUser: ReadonlyMap<string, Bytes>, at: Date): Promise<void> {
    await this.addBucketsMany([{ serverId, byUser }], at);
  }

  /** As addBuckets for several servers of one collection: the user rows of all in the same upserts. */
  async addBucketsMany(
    parts: readonly { serverId: string; byUser: ReadonlyMap<string, Bytes> }[],
    at: Date,
  ): Promise<void> {
    const rows: [string, string, number, number][] = [];
    const servers: { serverId: string; bytes: Bytes }[] = [];
    for (const { serverId, byUser } of parts) {
      if (byUser.size === 0) continue;
      let uplinkBytes = 0;
      let downlinkBytes = 0;
      for (const [userId, bytes] of byUser) {
        rows.push([userId, serverId, bytes.uplinkBytes, bytes.downlinkBytes]);
        uplinkBytes += bytes.uplinkBytes;
        downlinkBytes += bytes.downlinkBytes;
      }
      servers.push({ serverId, bytes: { uplinkBytes, downlinkBytes } });
    }
    if (rows.length === 0) return;
    for (const granularity of ["hour", "day"] as const) {
      const start = bucketStart(at, granularity).toISOString();
      for (const part of chunks(rows, ROWS_PER_STATEMENT)) {
        await this.#addUserBuckets(USER_TABLES[granularity], start, part);
      }
      for (const { serverId, bytes } of servers) {
        await this.#addServerBucket(SERVER_TABLES[granularity], serverId, start, bytes);
      }
    }
  }

  async #addUserBuckets(
    table: string,
    start: string,
    rows: readonly (readonly (string | number)[])[],
  ): Promise<void> {
    const input = jsonRows(
      this.dialect,
      { user_id: "uuid", server_id: "uuid", uplink_bytes: "bigint", downlink_bytes: "bigint" },
      rows,
    );
    // `where true`: SQLite's grammar needs it between INSERT … SELECT and ON CONFLICT.
    await sql`insert into ${sql.table(table)} (user_id, server_id, bucket_start, uplink_bytes, downlink_bytes)
      select r.user_id, r.server_id, ${typedValue(this.dialect, start, "timestamp")}, r.uplink_bytes,
        r.downlink_bytes
      from ${input} as r where true
      on conflict (user_id, bucket_start, server_id) do update set
        uplink_bytes = ${sql.ref(`${table}.uplink_bytes`)} + excluded.uplink_bytes,
        downlink_bytes = ${sql.ref(`${table}.downlink_bytes`)} + excluded.downlink_bytes`.execute(this.db);
  }

  async #addServerBucket(
    table: (typeof SERVER_TABLES)[Granularity],
    serverId: string,
    start: string,
    bytes: Bytes,
  ): Promise<void> {
    await this.db
      .insertInto(table)
      .values({
        server_id: serverId,
        bucket_start: start,
        uplink_bytes: bytes.uplinkBytes,
        downlink_bytes: bytes.downlinkBytes,
      })
      .onConflict((oc) =>
        oc.columns(["server_id", "bucket_start"]).doUpdateSet({
          uplink_bytes: sql`${sql.ref(`${table}.uplink_bytes`)} + excluded.uplink_bytes`,
          downlink_bytes: sql`${sql.ref(`${table}.downlink_bytes`)} + excluded.downlink_bytes`,
        }),
      )
      .execute();
  }

  /** A user's buckets in [from, to), summed over their servers, oldest first. */
  async listUserBuckets(
    userId: string,
    granularity: Granularity,
    from: Date,
    to: Date,
  ): Promise<StoredBucket[]> {
    const rows = await this.db
      .selectFrom(USER_TABLES[granularity])
      .select((eb) => [
        "bucket_start",
        eb.fn.sum<number | string>("uplink_bytes").as("uplink_bytes"),
        eb.fn.sum<number | string>("downlink_bytes").as("downlink_bytes"),
      ])
      .where("user_id", "=", userId)
      .where("bucket_start", ">=", from.toISOString())
      .where("bucket_start", "<", to.toISOString())
      .groupBy("bucket_start")
      .orderBy("bucket_start")
      .execute();
    return rows.map(toBucket);
  }

  /** Every server's buckets in [from, to) (or one server's), by server, oldest first. */
  async listServerBuckets(
    granularity: Granularity,
    from: Date,
    to: Date,
    serverId?: string,
  ): Promise<StoredServerBucket[]> {
    let query = this.db
      .selectFrom(SERVER_TABLES[granularity])
      .select(["server_id", "bucket_start", "uplink_bytes", "downlink_bytes"])
      .where("bucket_start", ">=", from.toISOString())
      .where("bucket_start", "<", to.toISOString());
    if (serverId !== undefined) query = query.where("server_id", "=", serverId);
    const rows = await query.orderBy("server_id").orderBy("bucket_start").execute();
    return rows.map((row) => ({ serverId: row.server_id, ...toBucket(row) }));
  }

  /**
   * As listServerBuckets, over one admin's users only (an own-scoped GET /api/usage): their buckets
   * summed per server and bucket.
   */
  async listOwnedServerBuckets(
    ownerId: string,
    granularity: Granularity,
    from: Date,
    to: Date,
    serverId?: string,
  ): Promise<StoredServerBucket[]> {
    let query = this.db
      .selectFrom(`${USER_TABLES[granularity]} as b`)
      .innerJoin("users as u", "u.id", "b.user_id")
      .select((eb) => [
        "b.server_id",
        "b.bucket_start",
        eb.fn.sum<number | string>("b.uplink_bytes").as("uplink_bytes"),
        eb.fn.sum<number | string>("b.downlink_bytes").as("downlink_bytes"),
      ])
      .where("u.owner_admin_id", "=", ownerId)
      .where("b.bucket_start", ">=", from.toISOString())
      .where("b.bucket_start", "<", to.toISOString());
    if (serverId !== undefined) query = query.where("b.server_id", "=", serverId);
    const rows = await query
      .groupBy(["b.server_id", "b.bucket_start"])
      .orderBy("b.server_id")
      .orderBy("b.bucket_start")
      .execute();
    return rows.map((row) => ({ serverId: row.server_id, ...toBucket(row) }));
  }

  /** Deletes buckets that start before the cutoffs; how many of each kind went. */
  async prune(cutoffs: { hourly: Date; daily: Date }): Promise<{ hourly: number; daily: number }> {
    const counts = { hourly: 0, daily: 0 };
    for (const [kind, granularity] of [
      ["hourly", "hour"],
      ["daily", "day"],
    ] as const) {
      const before = cutoffs[kind].toISOString();
      for (const table of [USER_TABLES[granularity], SERVER_TABLES[granularity]]) {
        // Through the servers: one range of the (server_id, bucket_start) index per server, no scan.
        const result = await this.db
          .deleteFrom(table)
          .where("server_id", "in", (eb) => eb.selectFrom("servers").select("id"))
          .where("bucket_start", "<", before)
          .executeTakeFirst();
        counts[kind] += Number(result.numDeletedRows);
      }
    }
    return counts;
  }
}

function toBucket(row: {
  bucket_start: string | Date;
  uplink_bytes: number | string;
  downlink_bytes: number | string;
}): StoredBucket {
  return {
    start: read.timestamp(row.bucket_start),
    uplinkBytes: read.bigint(row.uplink_bytes),
    downlinkBytes: read.bigint(row.downlink_bytes),
  };
}
