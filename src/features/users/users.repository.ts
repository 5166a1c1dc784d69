// Users in SQL. Name search uses the dialect's substring index: FTS5 trigram on SQLite (queries of
// 3+ characters), pg_trgm GIN on PostgreSQL; shorter queries fall back to a LIKE scan that stops at
// the limit.
import { type Kysely, type Selectable, sql } from "kysely";
import { type DialectName, escapeLike, IDS_PER_STATEMENT, read } from "../../db/dialect.ts";
import type { Database, UsersTable } from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { User } from "./users.schemas.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const COLUMNS = [
  "id",
  "name",
  "comment",
  "announce",
  "ip_limit",
  "device_limit",
  "fair_use_blocked_until",
  "telegram_id",
  "created_at",
  "updated_at",
  "sub_token",
  "status",
  "data_limit_bytes",
  "data_limit_reset",
  "used_bytes",
  "lifetime_used_bytes",
  "last_reset_at",
  "expire_at",
  "on_hold_duration_seconds",
  "on_hold_timeout_at",
  "online_at",
  "sub_updated_at",
  "sub_last_user_agent",
  "owner_admin_id",
  "next_plan_id",
] as const;
/** The same list for the raw SQL of name search. */
const COLUMN_LIST = sql.raw(COLUMNS.join(", "));
const U_COLUMN_LIST = sql.raw(COLUMNS.map((c) => `u.${c}`).join(", "));

/** The columns a write may set (the service decides status; counters belong to the lifecycle). */
export type UserPatch = Partial<
  Pick<
    User,
    | "name"
    | "comment"
    | "announce"
    | "ip_limit"
    | "device_limit"
    | "telegram_id"
    | "status"
    | "data_limit_bytes"
    | "data_limit_reset"
    | "expire_at"
    | "on_hold_duration_seconds"
    | "on_hold_timeout_at"
    | "next_plan_id"
  >
>;
export type UserRow = Pick<Selectable<UsersTable>, (typeof COLUMNS)[number]>;
/** Where a keyset page starts: after this user in (created_at, id) order. */
export type UserPosition = { createdAt: string; id: string };
export type UsersPage = { items: User[]; total: number; hasMore: boolean };

export class UsersRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** Page `page` (OFFSET), one row more than asked to tell whether another page follows. */
  async listUsers(page: number, perPage: number): Promise<UsersPage> {
    const rows = await this.db
      .selectFrom("users")
      .select(COLUMNS)
      .orderBy("created_at")
      .orderBy("id")
      .limit(perPage + 1)
      .offset((page - 1) * perPage)
      .execute();
    return this.#page(rows, perPage);
  }

  /** The users after a position in (created_at, id) order: a range of the index, at any depth. */
  async listUsersAfter(after: UserPosition, perPage: number): Promise<UsersPage> {
    const rows = await this.db
      .selectFrom("users")
      .select(COLUMNS)
      .where((eb) => eb(eb.refTuple("created_at", "id"), ">", eb.tuple(after.createdAt, after.id)))
      .orderBy("created_at")
      .orderBy("id")
      .limit(perPage + 1)
      .execute();
    return this.#page(rows, perPage);
  }

  async #page(rows: UserRow[], perPage: number): Promise<UsersPage> {
    // Sequential on purpose: run concurrently on two pg connections this pair measured 20-50 ms
    // instead of 2 ms (bench/users-search.ts), a TCP-level stall rather than query cost.
    const count = await this.db
      .selectFrom("row_counts")
      .select("n")
      .where("table_name", "=", "users")
      .executeTakeFirstOrThrow();
    const items = rows.slice(0, perPage).map(toUser);
    return { items, total: Number(count.n), hasMore: rows.length > perPage };
  }

  async findUser(id: string, db: Kysely<Database> = this.db): Promise<User | undefined> {
    const row = await db.selectFrom("users").select(COLUMNS).where("id", "=", id).executeTakeFirst();
    return row && toUser(row);
  }

  async getUser(id: string): Promise<User> {
    const user = await this.findUser(id);
    if (user === undefined) throw new NotFoundError("user", id);
    return user;
  }

  /**
   * Among one admin's users (an own-scoped search): the id, the telegram_id or a name substring, in
   * created_at order along the users_owner index (a reseller's users, bounded by their quota).
   */
  async searchOwnedUsers(q: string, limit: number, ownerId: string): Promise<User[]> {
    const pattern = `%${escapeLike(q)}%`;
    const like = this.dialect === "postgres" ? sql.raw("ILIKE") : sql.raw("LIKE");
    const rows = await this.db
      .selectFrom("users")
      .select(COLUMNS)
      .where("owner_admin_id", "=", ownerId)
      .where((eb) =>
        eb.or([
          ...(UUID_RE.test(q) ? [eb("id", "=", q.toLowerCase())] : []),
          sql<boolean>`name ${like} ${pattern} ESCAPE '\\'`,
          ...(/^\d{1,15}$/.test(q) ? [eb("telegram_id", "=", Number(q))] : []),
        ]),
      )
      .orderBy("created_at")
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map(toUser);
  }

  /** Exact id and telegram_id matches first, then name matches; at most `limit`, no duplicates. */
  async searchUsers(q: string, limit: number): Promise<User[]> {
    const found = new Map<string, User>();
    if (UUID_RE.test(q)) {
      const user = await this.findUser(q.toLowerCase());
      if (user) found.set(user.id, user);
    }
    if (/^\d{1,15}$/.test(q)) {
      const rows = await this.db
        .selectFrom("users")
        .select(COLUMNS)
        .where("telegram_id", "=", Number(q))
        .limit(limit)
        .execute();
      for (const row of rows) found.set(row.id, toUser(row));
    }
    if (found.size < limit) {
      for (const user of await this.#searchNames(q, limit)) {
        if (found.size >= limit) break;
        found.set(user.id, user);
      }
    }
    return [...found.values()];
  }

  async #searchNames(q: string, limit: number): Promise<User[]> {
    const pattern = `%${escapeLike(q)}%`;
    if (this.dialect === "postgres" && hasTrigrams(q)) {
      // Through the trigram index whatever the planner guesses (migration 0011).
      const rows = await sql<UserRow>`
        SELECT ${COLUMN_LIST} FROM users_with_name_like(${pattern}, ${limit})`.execute(this.db);
      return rows.rows.map(toUser);
    }
    if (this.dialect === "postgres") {
      const rows = await this.db
        .selectFrom("users")
        .select(COLUMNS)
        .where(sql<boolean>`name ILIKE ${pattern} ESCAPE '\\'`)
        .limit(limit)
        .execute();
      return rows.map(toUser);
    }
    if ([...q].length >= 3) {
      const phrase = `"${q.replaceAll('"', '""')}"`;
      const rows = await sql<UserRow>`
        SELECT ${U_COLUMN_LIST}
        FROM users_name_fts f JOIN users u ON u.seq = f.rowid
        WHERE users_name_fts MATCH ${phrase} LIMIT ${limit}`.execute(this.db);
      return rows.rows.map(toUser);
    }
    const rows = await this.db
      .selectFrom("users")
      .select(COLUMNS)
      .where(sql<boolean>`name LIKE ${pattern} ESCAPE '\\'`)
      .limit(limit)
      .execute();
    return rows.map(toUser);
  }

  /** The user as given; the counters and what was last seen start at their defaults. */
  async insertUser(user: User, subToken: string, db: Kysely<Database> = this.db): Promise<void> {
    await db
      .insertInto("users")
      .values({
        id: user.id,
        name: user.name,
        comment: user.comment,
        announce: user.announce,
        ip_limit: user.ip_limit,
        device_limit: user.device_limit,
        telegram_id: user.telegram_id,
        created_at: user.created_at,
        updated_at: user.updated_at,
        sub_token: subToken,
        status: user.status,
        data_limit_bytes: user.data_limit_bytes,
        data_limit_reset: user.data_limit_reset,
        last_reset_at: user.last_reset_at,
        expire_at: user.expire_at,
        on_hold_duration_seconds: user.on_hold_duration_seconds,
        on_hold_timeout_at: user.on_hold_timeout_at,
        owner_admin_id: user.owner_admin_id,
        next_plan_id: user.next_plan_id,
      })
      .execute();
  }

  /** Who owns the user: an admin's id, null (nobody), or undefined when there is no such user. */
  async findOwner(id: string): Promise<string | null | undefined> {
    const row = await this.db
      .selectFrom("users")
      .select("owner_admin_id")
      .where("id", "=", id)
      .executeTakeFirst();
    return row === undefined ? undefined : row.owner_admin_id;
  }

  /** Of these ids, the users `ownerId` owns. */
  async listOwnedIds(ids: readonly string[], ownerId: string): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const rows = await this.db
        .selectFrom("users")
        .select("id")
        .where("id", "in", ids.slice(i, i + IDS_PER_STATEMENT))
        .where("owner_admin_id", "=", ownerId)
        .execute();
      for (const row of rows) out.add(row.id);
    }
    return out;
  }

  async adminExists(id: string): Promise<boolean> {
    const row = await this.db.selectFrom("admins").select("id").where("id", "=", id).executeTakeFirst();
    return row !== undefined;
  }

  /** Moves users to another owner (null: nobody); the number moved. */
  async setOwner(ids: readonly string[], ownerId: string | null, updatedAt: string, db = this.db) {
    let moved = 0;
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const result = await db
        .updateTable("users")
        .set({ owner_admin_id: ownerId, updated_at: updatedAt })
        .where("id", "in", ids.slice(i, i + IDS_PER_STATEMENT))
        .executeTakeFirst();
      moved += Number(result.numUpdatedRows);
    }
    return moved;
  }

  /**
   * A new sub_token (the old subscription URL stops working) and the by-id URL closed for good (one
   * UPDATE: the token's trigger drops the record every instance keeps); false when the id is unknown.
   */
  async setSubToken(id: string, subToken: string, updatedAt: string): Promise<boolean> {
    const result = await this.db
      .updateTable("users")
      .set({ sub_token: subToken, sub_by_id_revoked_at: updatedAt, updated_at: updatedAt })
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Applies only the given fields; returns the updated user or undefined when the id is unknown. */
  async updateUser(
    id: string,
    patch: UserPatch,
    updatedAt: string,
    db: Kysely<Database> = this.db,
  ): Promise<User | undefined> {
    // The lifecycle job's bookkeeping follows the new numbers: a new period is counted from its next
    // tick, a new limit re-arms the usage thresholds, a new expiry the expiring notice.
    const internal = {
      ...(patch.data_limit_reset === undefined ? {} : { next_reset_at: null }),
      ...(patch.data_limit_bytes === undefined ? {} : { notified_usage_percent: 0, next_notice_percent: 0 }),
      ...(patch.expire_at === undefined ? {} : { expiring_notified_at: null }),
    };
    const result = await db
      .updateTable("users")
      .set({ ...patch, ...internal, updated_at: updatedAt })
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 0 ? undefined : this.findUser(id, db);
  }

  /** Which of these ids are users (a bulk grant's check), 5,000 per query. */
  async listExistingIds(ids: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const part = ids.slice(i, i + IDS_PER_STATEMENT);
      const rows = await this.db.selectFrom("users").select("id").where("id", "in", part).execute();
      for (const row of rows) out.add(row.id);
    }
    return out;
  }

  async deleteUser(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("users").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

const WORD_CHARACTER = /[\p{L}\p{N}]/u;

/**
 * Whether pg_trgm takes at least one trigram from `%q%` (its generate_wildcard_trgm): a run of
 * letters or digits makes trigrams when, padded with two spaces where a non-word character inside q
 * starts it and one where one ends it, it is 3 characters or more. Without any, a GIN scan reads the
 * whole index.
 */
export function hasTrigrams(q: string): boolean {
  const chars = [...q];
  for (let start = 0; start < chars.length; ) {
    if (!WORD_CHARACTER.test(chars[start] as string)) {
      start++;
      continue;
    }
    let end = start;
    while (end < chars.length && WORD_CHARACTER.test(chars[end] as string)) end++;
    const padded = end - start + (start > 0 ? 2 : 0) + (end < chars.length ? 1 : 0);
    if (padded >= 3) return true;
    start = end;
  }
  return false;
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    comment: row.comment,
    announce: row.announce,
    ip_limit: row.ip_limit,
    device_limit: row.device_limit,
    fair_use_blocked_until: read.optionalTimestamp(row.fair_use_blocked_until),
    telegram_id: read.optionalBigint(row.telegram_id),
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
    subscription_url: `/sub/${row.sub_token}`,
    status: row.status,
    data_limit_bytes: read.optionalBigint(row.data_limit_bytes),
    data_limit_reset: row.data_limit_reset,
    used_bytes: read.bigint(row.used_bytes),
    lifetime_used_bytes: read.bigint(row.lifetime_used_bytes),
    last_reset_at: read.optionalTimestamp(row.last_reset_at),
    expire_at: read.optionalTimestamp(row.expire_at),
    on_hold_duration_seconds: read.optionalBigint(row.on_hold_duration_seconds),
    on_hold_timeout_at: read.optionalTimestamp(row.on_hold_timeout_at),
    online_at: read.optionalTimestamp(row.online_at),
    sub_updated_at: read.optionalTimestamp(row.sub_updated_at),
    sub_last_user_agent: row.sub_last_user_agent,
    owner_admin_id: row.owner_admin_id,
    next_plan_id: row.next_plan_id,
  };
}
