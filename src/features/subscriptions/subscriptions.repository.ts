// What subscriptions read: a user's name and active grants (by user_id, or a page of users for the
// cache's warm-up), the link parameters of the inbounds those grants are on (few, shared by all
// users, read once and kept by the cache), and the change feed that tells the cache what to drop.
import { type Kysely, sql } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { type HostRow, hostSpecOf } from "../inbounds/hosts.repository.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import type { Change, ChangeSource, ChangesRead } from "./engine/change-feed.ts";
import type { SweepCursor, WarmCursor } from "./engine/engine.ts";

export type GrantRow = { inboundId: string; credential: string; uplinkBytes: number; downlinkBytes: number };
/** What the subscription shows of the user's lifecycle (Subscription-Userinfo, placeholders). */
export type LifecycleRow = {
  status: UserStatus;
  dataLimitBytes: number | null;
  dataLimitReset: DataLimitReset;
  usedBytes: number;
  expireAt: string | null;
  lastResetAt: string | null;
  createdAt: string;
};
/** A user and their active grants in the order they were given. */
export type SubscriptionRows = {
  userId: string;
  userName: string;
  subToken: string | null;
  /** The subscription was revoked: /sub/{user_id} is 404 for this user (migration 0021). */
  isByIdRevoked: boolean;
  /** The user's own announcement (migration 0023), or null. */
  announce: string | null;
  /** Devices allowed at fetch time (migration 0032; null: the settings' default; 0: unlimited). */
  deviceLimit: number | null;
  lifecycle: LifecycleRow;
  grants: GrantRow[];
};
/** One /sub fetch to record: the user, when (ISO), and the User-Agent (truncated; null: none). */
export type FetchRow = { userId: string; at: string; userAgent: string | null };
export type InboundLinkRow = { id: string; isActive: boolean; linkParams: LinkParams };
/** A user's traffic this period (used_bytes) and their active grants' counters (how it splits up/down). */
export type TotalsRow = { userId: string; usedBytes: number; uplinkBytes: number; downlinkBytes: number };
export type UsedRow = { userId: string; usedBytes: number };
/** Where the totals sweep's walk goes on: SQLite's seq, PostgreSQL's id (listUsedAfter()). */
export type UsedPage = { rows: UsedRow[]; next: SweepCursor | undefined };
export type SubscriptionsPage = { users: SubscriptionRows[]; next: WarmCursor | undefined };

const GRANT_COLUMNS = ["a.server_inbound_id", "a.credential", "a.uplink_bytes", "a.downlink_bytes"] as const;
const USER_COLUMNS = [
  "id",
  "name",
  "sub_token",
  "sub_by_id_revoked_at",
  "announce",
  "device_limit",
  "status",
  "data_limit_bytes",
  "data_limit_reset",
  "used_bytes",
  "expire_at",
  "last_reset_at",
  "created_at",
] as const;
const JOINED_USER_COLUMNS = [
  "u.id as user_id",
  "u.name",
  "u.sub_token",
  "u.sub_by_id_revoked_at",
  "u.announce",
  "u.device_limit",
  "u.status",
  "u.data_limit_bytes",
  "u.data_limit_reset",
  "u.used_bytes",
  "u.expire_at",
  "u.last_reset_at",
  "u.created_at",
] as const;
/** Rows per statement when /sub fetches are written (3 parameters each). */
const FETCHES_PER_STATEMENT = 1000;

type JoinedRow = {
  user_id: string;
  name: string;
  sub_token: string | null;
  sub_by_id_revoked_at: string | Date | null;
  announce: string | null;
  device_limit: number | null;
  status: UserStatus;
  data_limit_bytes: number | string | null;
  data_limit_reset: DataLimitReset;
  used_bytes: number | string;
  expire_at: string | Date | null;
  last_reset_at: string | Date | null;
  created_at: string | Date;
  server_inbound_id: string | null;
  credential: string | null;
  uplink_bytes: number | string | null;
  downlink_bytes: number | string | null;
};

export class SubscriptionsRepository implements ChangeSource {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** undefined when the user does not exist. */
  async findSubscription(userId: string): Promise<SubscriptionRows | undefined> {
    const rows = await this.#withGrants(
      this.db.selectFrom("users").select(USER_COLUMNS).where("id", "=", userId),
    )
      .orderBy("a.created_at")
      .orderBy("a.id")
      .execute();
    return groupByUser(rows)[0];
  }

  /** undefined when no user has this sub_token. */
  async findSubscriptionByToken(token: string): Promise<SubscriptionRows | undefined> {
    const rows = await this.#withGrants(
      this.db.selectFrom("users").select(USER_COLUMNS).where("sub_token", "=", token),
    )
      .orderBy("a.created_at")
      .orderBy("a.id")
      .execute();
    return groupByUser(rows)[0];
  }

  /** Up to `limit` users after `after`, oldest first (the warm-up walks all of them; created_at is indexed). */
  async listSubscriptionsAfter(after: WarmCursor | undefined, limit: number): Promise<SubscriptionsPage> {
    let users = this.db
      .selectFrom("users")
      .select(USER_COLUMNS)
      .orderBy("created_at")
      .orderBy("id")
      .limit(limit);
    if (after !== undefined) {
      users = users.where((eb) =>
        eb(eb.refTuple("created_at", "id"), ">", eb.tuple(after.createdAt, after.id)),
      );
    }
    const rows = await this.db
      .selectFrom(users.as("u"))
      .leftJoin("user_access as a", (join) =>
        join.onRef("a.user_id", "=", "u.id").on("a.is_active", "=", true),
      )
      .select([...JOINED_USER_COLUMNS, ...GRANT_COLUMNS])
      .orderBy("u.created_at")
      .orderBy("u.id")
      .orderBy("a.created_at")
      .orderBy("a.id")
      .execute();
    const last = rows.at(-1);
    const next = last === undefined ? undefined : { createdAt: last.created_at, id: last.user_id };
    return { users: groupByUser(rows), next };
  }

  async countUsers(): Promise<number> {
    const row = await this.db
      .selectFrom("users")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .executeTakeFirst();
    return read.bigint(row?.n ?? 0);
  }

  /**
   * used_bytes of up to `limit` users after `after`, and where the next read goes on: the totals
   * sweep's walk over every user (used_bytes grows with every collection and tells the change feed
   * nothing). SQLite walks the table in its own order (seq, the rowid): a read is a few pages one
   * after the other, where walking by id (a random uuid) looked each row up in the table at random,
   * a page read from the file for each (2.6 µs against 0.5 a row at 1,000,000 users). New users get
   * the highest seq, so a pass reads them too. PostgreSQL walks its primary key, id.
   */
  async listUsedAfter(after: SweepCursor | undefined, limit: number): Promise<UsedPage> {
    const key = this.dialect === "sqlite" ? sql<SweepCursor>`seq` : sql<SweepCursor>`id`;
    let query = this.db
      .selectFrom("users")
      .select([key.as("key"), "id", "used_bytes"])
      .orderBy(key);
    if (after !== undefined) query = query.where(key, ">", after);
    const rows = await query.limit(limit).execute();
    return { rows: rows.map(usedRowOf), next: rows.at(-1)?.key };
  }

  /**
   * These users' used_bytes and the sums of their active grants' counters: what Subscription-Userinfo's
   * upload and download are made of (splitUsage()).
   */
  async listTotals(ids: readonly string[]): Promise<TotalsRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("users as u")
      .leftJoin("user_access as a", (join) =>
        join.onRef("a.user_id", "=", "u.id").on("a.is_active", "=", true),
      )
      .select((eb) => [
        "u.id",
        "u.used_bytes",
        eb.fn.coalesce(eb.fn.sum<number | string>("a.uplink_bytes"), sql.lit(0)).as("uplink_bytes"),
        eb.fn.coalesce(eb.fn.sum<number | string>("a.downlink_bytes"), sql.lit(0)).as("downlink_bytes"),
      ])
      .where("u.id", "in", ids)
      .groupBy(["u.id", "u.used_bytes"])
      .execute();
    return rows.map((row) => ({
      userId: row.id,
      usedBytes: read.bigint(row.used_bytes),
      uplinkBytes: read.bigint(row.uplink_bytes),
      downlinkBytes: read.bigint(row.downlink_bytes),
    }));
  }

  /**
   * The inbounds' link parameters, each with its hosts attached (host-entries.ts) when it has any:
   * the enabled ones in position order, its server's name and whether the server is healthy. An
   * inbound of a server left out of /sub (offline too long) reads as inactive: its grants give no entry.
   */
  async listInbounds(ids: readonly string[]): Promise<InboundLinkRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("server_inbounds as i")
      .innerJoin("servers as s", "s.id", "i.server_id")
      .select([
        "i.id",
        "i.is_active",
        "i.link_params",
        "s.name as server_name",
        "s.status as server_status",
        "s.left_out_of_sub",
      ])
      .where("i.id", "in", ids)
      .execute();
    const hostRows = await this.db
      .selectFrom("inbound_hosts")
      .selectAll()
      .where("server_inbound_id", "in", ids)
      .orderBy("server_inbound_id")
      .orderBy("position")
      .orderBy("id")
      .execute();
    const hostsOf = new Map<string, HostRow[]>();
    for (const row of hostRows) {
      const list = hostsOf.get(row.server_inbound_id) ?? [];
      list.push(row);
      hostsOf.set(row.server_inbound_id, list);
    }
    return rows.map((row) => {
      const linkParams = JSON.parse(row.link_params) as LinkParams;
      const hosts = hostsOf.get(row.id);
      if (hosts !== undefined) {
        linkParams.hosts = {
          serverName: row.server_name,
          serverHealthy: row.server_status !== "offline" && row.server_status !== "error",
          hosts: hosts.filter((host) => !read.bool(host.is_disabled)).map(hostSpecOf),
        };
      }
      // A server offline for longer than the setting's minutes (migration 0024): no entry of its inbounds.
      const isActive = read.bool(row.is_active) && !read.bool(row.left_out_of_sub);
      return { id: row.id, isActive, linkParams };
    });
  }

  async startingPoint(): Promise<number> {
    const query =
      this.dialect === "postgres"
        ? sql<{ n: string }>`SELECT (pg_snapshot_xmin(pg_current_snapshot())::text)::bigint AS n`
        : sql<{ n: number }>`SELECT coalesce(max(seq), 0) + 1 AS n FROM subscription_changes`;
    const { rows } = await query.execute(this.db);
    return read.bigint(rows[0]?.n ?? 0);
  }

  async changesFrom(watermark: number): Promise<ChangesRead> {
    if (this.dialect === "sqlite") {
      const rows = await this.db
        .selectFrom("subscription_changes")
        .select(["seq", "user_id", "inbound_id"])
        .where("seq", ">=", watermark)
        .orderBy("seq")
        .execute();
      const changes = rows.map((row) => change(row.seq, row.seq, row));
      return { changes, settled: (changes.at(-1)?.seq ?? watermark - 1) + 1 };
    }
    // The snapshot's xmin and the rows come from one statement, so they describe the same snapshot.
    const { rows } = await sql<{
      xmin: string;
      seq: string | null;
      txid: string | null;
      user_id: string | null;
      inbound_id: string | null;
    }>`WITH snapshot AS (SELECT (pg_snapshot_xmin(pg_current_snapshot())::text)::bigint AS xmin)
       SELECT snapshot.xmin, c.seq, c.txid, c.user_id, c.inbound_id
       FROM snapshot LEFT JOIN subscription_changes c ON c.txid >= ${watermark}
       ORDER BY c.seq`.execute(this.db);
    const changes = rows.flatMap((row) =>
      row.seq === null || row.txid === null ? [] : [change(row.seq, row.txid, row)],
    );
    return { changes, settled: read.bigint(rows[0]?.xmin ?? watermark) };
  }

  /** Changes older than every reader's polling interval; returns how many were deleted. */
  async deleteChangesOlderThan(seconds: number): Promise<number> {
    const cutoff =
      this.dialect === "postgres"
        ? sql<string>`now() - make_interval(secs => ${seconds})`
        : sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${`-${seconds} seconds`})`;
    const result = await this.db
      .deleteFrom("subscription_changes")
      .where("created_at", "<", cutoff)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Users (the query given) left-joined with their active grants. */
  #withGrants(users: ReturnType<typeof usersQuery>) {
    return this.db
      .selectFrom(users.as("u"))
      .leftJoin("user_access as a", (join) =>
        join.onRef("a.user_id", "=", "u.id").on("a.is_active", "=", true),
      )
      .select([...JOINED_USER_COLUMNS, ...GRANT_COLUMNS]);
  }

  /**
   * Records /sub fetches: sub_updated_at and sub_last_user_agent of each user, one set-based UPDATE
   * per FETCHES_PER_STATEMENT users (a join with a VALUES list), never moving sub_updated_at back
   * (another instance may have written a later fetch). Unknown users match nothing.
   */
  async recordFetches(fetches: readonly FetchRow[]): Promise<void> {
    for (let from = 0; from < fetches.length; from += FETCHES_PER_STATEMENT) {
      const chunk = fetches.slice(from, from + FETCHES_PER_STATEMENT);
      if (this.dialect === "postgres") {
        const values = sql.join(
          chunk.map((f) => sql`(${f.userId}::uuid, ${f.at}::timestamptz, ${f.userAgent}::text)`),
        );
        await sql`UPDATE users AS u SET sub_updated_at = v.at, sub_last_user_agent = v.ua
          FROM (VALUES ${values}) AS v (id, at, ua)
          WHERE u.id = v.id AND (u.sub_updated_at IS NULL OR u.sub_updated_at <= v.at)`.execute(this.db);
      } else {
        const values = sql.join(chunk.map((f) => sql`(${f.userId}, ${f.at}, ${f.userAgent})`));
        await sql`UPDATE users SET sub_updated_at = v.column2, sub_last_user_agent = v.column3
          FROM (VALUES ${values}) AS v
          WHERE users.id = v.column1 AND (users.sub_updated_at IS NULL OR users.sub_updated_at <= v.column2)`.execute(
          this.db,
        );
      }
    }
  }
}

function usersQuery(db: Kysely<Database>) {
  return db.selectFrom("users").select(USER_COLUMNS);
}

function change(
  seq: number | string,
  order: number | string,
  row: { user_id: string | null; inbound_id: string | null },
): Change {
  return { seq: read.bigint(seq), order: read.bigint(order), userId: row.user_id, inboundId: row.inbound_id };
}

/** Rows ordered by user → one entry per user, grants in row order (a user without grants has one null row). */
function groupByUser(rows: readonly JoinedRow[]): SubscriptionRows[] {
  const users: SubscriptionRows[] = [];
  let current: SubscriptionRows | undefined;
  for (const row of rows) {
    if (current?.userId !== row.user_id) {
      current = {
        userId: row.user_id,
        userName: row.name,
        subToken: row.sub_token,
        isByIdRevoked: row.sub_by_id_revoked_at !== null,
        announce: row.announce,
        deviceLimit: row.device_limit,
        lifecycle: {
          status: row.status,
          dataLimitBytes: read.optionalBigint(row.data_limit_bytes),
          dataLimitReset: row.data_limit_reset,
          usedBytes: read.bigint(row.used_bytes),
          expireAt: read.optionalTimestamp(row.expire_at),
          lastResetAt: read.optionalTimestamp(row.last_reset_at),
          createdAt: read.timestamp(row.created_at),
        },
        grants: [],
      };
      users.push(current);
    }
    if (row.server_inbound_id === null || row.credential === null) continue;
    current.grants.push({
      inboundId: row.server_inbound_id,
      credential: row.credential,
      uplinkBytes: read.bigint(row.uplink_bytes ?? 0),
      downlinkBytes: read.bigint(row.downlink_bytes ?? 0),
    });
  }
  return users;
}

function usedRowOf(row: { id: string; used_bytes: number | string }): UsedRow {
  return { userId: row.id, usedBytes: read.bigint(row.used_bytes) };
}
