// The users list's filters and sorts, and the bulk actions over users, in SQL. Every list read is an
// index range (migrations 0015 and 0018): one range per status when several are asked for (merged by
// the caller in the same order), expire_at's users who never expire as a range of their own (after
// the dated ones ascending, before them descending). Bulk actions are set-based: one UPDATE per chunk
// of ids for the numbers and one that judges the status again, in a transaction.
import { type Kysely, type RawBuilder, sql, type Transaction } from "kysely";
import { type DialectName, IDS_PER_STATEMENT } from "../../db/dialect.ts";
import { usageRatioSql } from "../../db/migrations/0018_user_filters.ts";
import type { Database } from "../../db/types.ts";
import type { UserStatus } from "../../domain/users.ts";
import { COLUMNS, toUser, type UserRow } from "./users.repository.ts";
import type { User } from "./users.schemas.ts";

export type ListFilter = {
  /** One or several statuses (sorted, no duplicates); undefined = any. */
  statuses?: UserStatus[];
  /** ISO, as toISOString writes it. */
  expiresBefore?: string;
  usedOverPercent?: number;
  /** Users this admin owns; null: users owned by nobody; undefined: anyone's (migration 0031). */
  ownerAdminId?: string | null;
};
export type SortKey = "created_at" | "used_bytes" | "expire_at";
export type ListSort = { key: SortKey; order: "asc" | "desc" };
/** Where a keyset page starts: after the user with this sort value (null: never expires) and id. */
export type SortPosition = { value: string | number | null; id: string };

/** The largest data limit a bulk add leaves (what the API accepts). */
const MAX_BYTES = Number.MAX_SAFE_INTEGER;

export type BulkNumbers =
  | { type: "extend_expiry"; days: number }
  | { type: "add_data_limit"; bytes: number }
  | { type: "reset_usage" }
  | { type: "set_status"; status: "active" | "disabled" };

export class UserFiltersRepository {
  readonly #ratio: RawBuilder<number>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    this.#ratio = sql.raw<number>(usageRatioSql(dialect));
  }

  /**
   * The filter as SQL conditions; `status` narrows to one status (a range of its own). SQLite plans
   * without statistics, so which index serves is said here with unary `+` (a term so marked is
   * checked, never used to pick an index): a page (`purpose` "page") walks the status or sort index
   * and checks the usage ratio on the way, stopping after a page of matches; a count reads the
   * covering usage-ratio index instead of a status range with a table lookup per user.
   */
  #conditions(
    filter: ListFilter,
    status?: UserStatus,
    purpose: "page" | "count" = "count",
  ): RawBuilder<boolean>[] {
    const parts: RawBuilder<boolean>[] = [];
    const sqlite = this.dialect === "sqlite";
    const ratioRange = filter.usedOverPercent !== undefined && !(sqlite && purpose === "page");
    const statusCol = sql.raw(sqlite && ratioRange ? "+status" : "status");
    if (status !== undefined) parts.push(sql<boolean>`${statusCol} = ${status}`);
    else if (filter.statuses !== undefined) {
      parts.push(sql<boolean>`${statusCol} IN (${sql.join(filter.statuses)})`);
    }
    if (filter.expiresBefore !== undefined) parts.push(sql<boolean>`expire_at < ${filter.expiresBefore}`);
    if (filter.ownerAdminId === null) parts.push(sql<boolean>`owner_admin_id IS NULL`);
    else if (filter.ownerAdminId !== undefined) {
      parts.push(sql<boolean>`owner_admin_id = ${filter.ownerAdminId}`);
    }
    const percent = filter.usedOverPercent;
    if (percent !== undefined) {
      // The index range (a double compared with a double: rounding keeps every true match in it),
      // then the exact integer test (used_bytes ≤ 2^53 × 100 and percent × limit ≤ 1000 × 2^53 fit).
      parts.push(sql<boolean>`data_limit_bytes IS NOT NULL`);
      parts.push(
        ratioRange
          ? sql<boolean>`${this.#ratio} >= ${percent / 100}`
          : sql<boolean>`+${this.#ratio} >= ${percent / 100}`,
      );
      parts.push(sql<boolean>`used_bytes * 100 >= ${percent} * data_limit_bytes`);
    }
    return parts;
  }

  #select(conditions: RawBuilder<boolean>[]) {
    let query = this.db.selectFrom("users").select(COLUMNS);
    for (const condition of conditions) query = query.where(condition);
    return query;
  }

  /**
   * Up to `limit` users of one status (or of the filter's statuses when `status` is undefined) after
   * `after`, in the sort's order: one index range per segment (dated users, users who never expire).
   */
  async range(
    filter: ListFilter,
    status: UserStatus | undefined,
    sort: ListSort,
    after: SortPosition | undefined,
    limit: number,
  ): Promise<User[]> {
    const segments = segmentsOf(filter, sort);
    let start = 0;
    if (after !== undefined) {
      start = segments.indexOf(after.value === null ? "never" : "dated");
      if (start < 0) return [];
    }
    const cmp = sql.raw(sort.order === "asc" ? ">" : "<");
    const key = sql.ref(sort.key);
    const out: User[] = [];
    for (let s = start; s < segments.length && out.length < limit; s++) {
      const segment = segments[s];
      const conditions = this.#conditions(filter, status, "page");
      if (sort.key === "expire_at") {
        conditions.push(
          segment === "never" ? sql<boolean>`expire_at IS NULL` : sql<boolean>`expire_at IS NOT NULL`,
        );
      }
      if (after !== undefined && s === start) {
        conditions.push(
          segment === "never"
            ? sql<boolean>`id ${cmp} ${after.id}`
            : sql<boolean>`(${key}, id) ${cmp} (${after.value}, ${after.id})`,
        );
      }
      let query = this.#select(conditions);
      if (segment === "dated") query = query.orderBy(key, sort.order);
      const rows: UserRow[] = await query
        .orderBy("id", sort.order)
        .limit(limit - out.length)
        .execute();
      for (const row of rows) out.push(toUser(row));
    }
    return out;
  }

  /** Page by OFFSET (page numbers): one query over all the filter's statuses. */
  async offsetPage(filter: ListFilter, sort: ListSort, offset: number, limit: number): Promise<User[]> {
    let query = this.#select(this.#conditions(filter, undefined, "page"));
    if (sort.key === "expire_at" && this.dialect === "sqlite") {
      // PostgreSQL's default already puts NULL last ascending and first descending.
      query = query.orderBy(
        sql`expire_at ${sql.raw(sort.order === "asc" ? "ASC NULLS LAST" : "DESC NULLS FIRST")}`,
      );
    } else {
      query = query.orderBy(sql.ref(sort.key), sort.order);
    }
    const rows = await query.orderBy("id", sort.order).limit(limit).offset(offset).execute();
    return rows.map(toUser);
  }

  /** How many users match (exact; an index range per condition). No filter: the row counter. */
  async count(filter: ListFilter): Promise<number> {
    const conditions = this.#conditions(filter);
    if (conditions.length === 0) {
      const row = await this.db
        .selectFrom("row_counts")
        .select("n")
        .where("table_name", "=", "users")
        .executeTakeFirstOrThrow();
      return Number(row.n);
    }
    let query = this.db.selectFrom("users").select((eb) => eb.fn.countAll<number | string>().as("n"));
    for (const condition of conditions) query = query.where(condition);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The next chunk of matching ids after `afterId`, in id order (a bulk action's walk). */
  async idsAfter(filter: ListFilter, afterId: string | undefined, limit: number): Promise<string[]> {
    let query = this.db.selectFrom("users").select("id");
    for (const condition of this.#conditions(filter)) query = query.where(condition);
    if (afterId !== undefined) query = query.where("id", ">", afterId);
    const rows = await query.orderBy("id").limit(limit).execute();
    return rows.map((row) => row.id);
  }

  /** The owners of these users (each once; nobody's users left out). */
  async ownersOf(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("users")
      .select("owner_admin_id")
      .distinct()
      .where("id", "in", ids)
      .where("owner_admin_id", "is not", null)
      .execute();
    return rows.flatMap((row) => (row.owner_admin_id === null ? [] : [row.owner_admin_id]));
  }

  /** Which of these ids are users (of `ownerAdminId` when given). */
  async existing(ids: readonly string[], ownerAdminId?: string): Promise<string[]> {
    if (ids.length === 0) return [];
    let query = this.db.selectFrom("users").select("id").where("id", "in", ids);
    if (ownerAdminId !== undefined) query = query.where("owner_admin_id", "=", ownerAdminId);
    const rows = await query.execute();
    return rows.map((row) => row.id);
  }

  /**
   * One action's numbers on these users (≤ IDS_PER_STATEMENT), then their status judged again the
   * way features/users/status.ts statusAfterWrite judges an admin's write, in one transaction.
   * Returns how many users the action changed and the ids whose status changed.
   */
  async apply(
    ids: readonly string[],
    action: BulkNumbers,
    now: string,
    /** The transaction to run in (a write under quotas, quotas.repository.ts); else one of its own. */
    within?: Transaction<Database>,
  ): Promise<{ changed: number; statusChanged: string[] }> {
    if (ids.length > IDS_PER_STATEMENT) throw new Error("chunk larger than IDS_PER_STATEMENT");
    if (ids.length === 0) return { changed: 0, statusChanged: [] };
    const inTransaction = <T>(work: (trx: Transaction<Database>) => Promise<T>) =>
      within === undefined ? this.db.transaction().execute(work) : work(within);
    return inTransaction(async (trx) => {
      let changed = 0;
      const update = () => trx.updateTable("users").where("id", "in", ids);
      if (action.type === "extend_expiry") {
        const result = await update()
          .set({ expire_at: this.#extended(action.days, now), updated_at: now })
          .where("expire_at", "is not", null)
          .executeTakeFirst();
        changed = Number(result.numUpdatedRows);
      } else if (action.type === "add_data_limit") {
        const result = await update()
          .set({
            data_limit_bytes: sql<number>`CASE WHEN data_limit_bytes > ${MAX_BYTES - action.bytes}
              THEN ${MAX_BYTES} ELSE data_limit_bytes + ${action.bytes} END`,
            updated_at: now,
          })
          .where("data_limit_bytes", "is not", null)
          .executeTakeFirst();
        changed = Number(result.numUpdatedRows);
      } else if (action.type === "reset_usage") {
        const result = await update()
          .set({ used_bytes: 0, last_reset_at: now, updated_at: now })
          .executeTakeFirst();
        changed = Number(result.numUpdatedRows);
      }
      const status =
        action.type === "set_status" && action.status === "disabled"
          ? sql<UserStatus>`'disabled'`
          : this.#judged(action.type === "set_status" ? "active" : undefined, now);
      const moved = await update()
        .set({ status, updated_at: now })
        .where(sql<boolean>`status <> ${status}`)
        .returning("id")
        .execute();
      const statusChanged = moved.map((row) => row.id);
      if (action.type === "set_status") changed = statusChanged.length;
      return { changed, statusChanged };
    });
  }

  /** expire_at + days, from now when it has passed already. */
  #extended(days: number, now: string): RawBuilder<string> {
    if (this.dialect === "postgres") {
      return sql<string>`GREATEST(expire_at, CAST(${now} AS timestamptz)) + make_interval(days => ${days})`;
    }
    return sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', MAX(expire_at, ${now}), ${`+${days} days`})`;
  }

  /**
   * statusAfterWrite in SQL, over the row's values as they are now: `requested` "active" asks for
   * active (limited or expired where the numbers say so); undefined keeps disabled and on_hold and
   * judges everyone else.
   */
  #judged(requested: "active" | undefined, now: string): RawBuilder<UserStatus> {
    const keep = requested === undefined ? sql`WHEN status IN ('disabled', 'on_hold') THEN status` : sql``;
    return sql<UserStatus>`(CASE ${keep}
      WHEN expire_at IS NOT NULL AND expire_at <= ${now} THEN 'expired'
      WHEN data_limit_bytes IS NOT NULL AND used_bytes >= data_limit_bytes THEN 'limited'
      ELSE 'active' END)`;
  }

  /** Of these ids, the users whose expire_at is before `cutoff`. */
  async expiredAmong(ids: readonly string[], cutoff: string): Promise<User[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("users")
      .select(COLUMNS)
      .where("id", "in", ids)
      .where("expire_at", "<", cutoff)
      .execute();
    return rows.map(toUser);
  }

  /** Deletes these users (their grants by cascade); how many were deleted. */
  async deleteMany(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const result = await this.db.deleteFrom("users").where("id", "in", ids).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** The ranges a sort reads in order: expire_at's never-expiring users come last ascending, first descending. */
function segmentsOf(filter: ListFilter, sort: ListSort): ("dated" | "never")[] {
  if (sort.key !== "expire_at" || filter.expiresBefore !== undefined) return ["dated"];
  return sort.order === "asc" ? ["dated", "never"] : ["never", "dated"];
}

/** The order `range` returns users in, for merging the ranges of several statuses. */
export function compareUsers(sort: ListSort): (a: User, b: User) => number {
  const direction = sort.order === "asc" ? 1 : -1;
  return (a, b) => {
    const va = a[sort.key];
    const vb = b[sort.key];
    if (va === null || vb === null) {
      if (va !== vb) return (va === null ? 1 : -1) * direction;
    } else if (va !== vb) {
      return (va < vb ? -1 : 1) * direction;
    }
    return (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) * direction;
  };
}
