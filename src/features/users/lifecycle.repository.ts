// One lifecycle tick in set-based SQL: the steps of lifecycle.ts's decide(), each one UPDATE … WHERE
// … RETURNING over the users it changes (partial indexes of migration 0015 find them), in one
// transaction; period resets in batches within a time budget (TickOptions). The only per-user work
// in JavaScript is the next boundary of a period that has none yet (a write set the period) or a
// rolling month, written back with one UPDATE … CASE per 500 users.
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type DialectName, plusSeconds, read, timestampParam } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { chunks } from "../../lib/limiter.ts";
import { nextResetAt } from "../../lib/periods.ts";
import { type LifecycleOptions, thresholdAbove } from "./lifecycle.ts";

/** What a notification tells about a user the tick changed. */
export type LifecycleRow = {
  id: string;
  name: string;
  status: UserStatus;
  used_bytes: number;
  data_limit_bytes: number | null;
  expire_at: string | null;
};

export type TickResult = {
  /** From on_hold (timeout), limited (reset or room again) or expired (later expiry). */
  activated: (LifecycleRow & { from: UserStatus })[];
  limited: LifecycleRow[];
  expired: LifecycleRow[];
  thresholds: (LifecycleRow & { percent: number })[];
  expiring: LifecycleRow[];
  resets: number;
};

export type TickOptions = LifecycleOptions & {
  /** Period resets per statement (default RESET_BATCH). */
  resetBatch?: number;
  /**
   * A tick resets in batches until it has spent this long on them (default RESET_BUDGET_MS; at least
   * one batch), the limited first, then the most overdue; the rest follow in the next ticks. The
   * users of a period all reset at the same boundary (midnight for `day`), and each reset rewrites the
   * row in every index of users: 50,000 of them in one statement would hold the tick for seconds.
   */
  resetBudgetMs?: number;
  /** Next notices re-aimed per statement (default NOTICE_BATCH). */
  noticeBatch?: number;
  /**
   * A tick re-aims next notices in batches until it has spent this long on them (default
   * NOTICE_BUDGET_MS; at least one batch); the rest follow in the next ticks. A limit written for many
   * users at once (a bulk change, an import, a seed) puts every one of them in users_usage_notice with
   * a next notice of 0: 1,000,000 rewritten in one statement held the tick, and on SQLite every request
   * with it, for a minute.
   */
  noticeBudgetMs?: number;
};

export const RESET_BATCH = 500;
export const RESET_BUDGET_MS = 50;
export const NOTICE_BATCH = 5000;
export const NOTICE_BUDGET_MS = 100;

const RETURNED = ["id", "name", "status", "used_bytes", "data_limit_bytes", "expire_at"] as const;

export class LifecycleRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  tick(now: Date, options: TickOptions): Promise<TickResult> {
    return this.db
      .transaction()
      .execute((trx) => new LifecycleRepository(trx, this.dialect).#tick(now, options));
  }

  async #tick(now: Date, options: TickOptions): Promise<TickResult> {
    const at = now.toISOString();
    const nowTs = timestampParam(this.dialect, at);
    // Constants are SQL literals, not parameters: PostgreSQL proves a partial index's predicate only
    // from literals.
    const result: TickResult = {
      activated: [],
      limited: [],
      expired: [],
      thresholds: [],
      expiring: [],
      resets: 0,
    };
    await this.#fillNextResets(now);
    // 1. on-hold timeout
    const started = await this.db
      .updateTable("users")
      .set({ status: "active", expire_at: plusSeconds(this.dialect, at, "on_hold_duration_seconds") })
      .where("status", "=", sql.lit("on_hold"))
      .where("on_hold_timeout_at", "<=", nowTs)
      .returning(RETURNED)
      .execute();
    result.activated.push(...started.map((row) => ({ ...toRow(row), from: "on_hold" as const })));
    // 2. period reset: the limited first (they are re-admitted), then the rest
    const boundary = (period: Exclude<DataLimitReset, "no_reset" | "month_rolling">) =>
      timestampParam(this.dialect, (nextResetAt(period, at, now) as Date).toISOString());
    const reset = {
      used_bytes: 0,
      last_reset_at: at,
      notified_usage_percent: 0,
      next_notice_percent: thresholdAbove(0, options.thresholds),
      next_reset_at: sql<string>`(case data_limit_reset when 'day' then ${boundary("day")}
        when 'week' then ${boundary("week")} when 'month' then ${boundary("month")}
        when 'year' then ${boundary("year")} else null end)`,
    };
    // A batch is chosen in a subquery (users_next_reset, in boundary order: on PostgreSQL as an array
    // the outer UPDATE looks up by primary key, not a second scan of the due rows); the outer WHERE
    // repeats the conditions, so a row another instance reset meanwhile is left alone.
    const dueWhere = sql<boolean>`data_limit_reset <> 'no_reset' AND next_reset_at <= ${nowTs}`;
    const size = Math.max(1, Math.floor(options.resetBatch ?? RESET_BATCH));
    const inBatch = (status: RawBuilder<boolean>) => {
      const ids = sql`SELECT id FROM users WHERE ${dueWhere} AND ${status}
        ORDER BY next_reset_at LIMIT ${sql.lit(size)}`;
      return this.dialect === "postgres"
        ? sql<boolean>`id = ANY(ARRAY(${ids}))`
        : sql<boolean>`id IN (${ids})`;
    };
    const due = this.db.updateTable("users").where(dueWhere);
    const resetStarted = performance.now();
    const budget = options.resetBudgetMs ?? RESET_BUDGET_MS;
    let isSpent = false;
    while (!isSpent) {
      const readmitted = await due
        .set({ ...reset, status: "active" })
        .where("status", "=", sql.lit("limited"))
        .where(inBatch(sql`status = 'limited'`))
        .returning(RETURNED)
        .execute();
      result.activated.push(...readmitted.map((row) => ({ ...toRow(row), from: "limited" as const })));
      result.resets += readmitted.length;
      if (readmitted.length < size) break;
      isSpent = performance.now() - resetStarted >= budget;
    }
    while (!isSpent) {
      const others = await due
        .set(reset)
        .where("status", "<>", sql.lit("limited"))
        .where(inBatch(sql`status <> 'limited'`))
        .executeTakeFirst();
      result.resets += Number(others.numUpdatedRows);
      if (Number(others.numUpdatedRows) < size) break;
      isSpent = performance.now() - resetStarted >= budget;
    }
    await this.#fillNextResets(now);
    // 3. expiry
    const expired = await this.db
      .updateTable("users")
      .set({ status: "expired" })
      .where(sql<boolean>`status IN ('active', 'limited')`)
      .where("expire_at", "is not", null)
      .where("expire_at", "<=", nowTs)
      .returning(RETURNED)
      .execute();
    result.expired.push(...expired.map(toRow));
    // 4. limit (the predicate of the partial index users_over_limit)
    const limited = await this.#update(
      "users_over_limit",
      sql`status = 'limited'`,
      sql`status = 'active' AND data_limit_bytes IS NOT NULL AND used_bytes >= data_limit_bytes`,
    );
    result.limited.push(...limited.map(toRow));
    // 5. re-admission: room again, or a later (or no) expiry. The IN term repeats the partial
    // index users_limited's WHERE, which is what lets SQLite use it.
    const roomy = await this.#update(
      "users_limited",
      sql`status = 'active'`,
      sql`status IN ('limited', 'expired') AND status = 'limited'
        AND (data_limit_bytes IS NULL OR used_bytes < data_limit_bytes)`,
    );
    result.activated.push(...roomy.map((row) => ({ ...toRow(row), from: "limited" as const })));
    const extended = await this.db
      .updateTable("users")
      .set({
        status: sql<UserStatus>`(case when data_limit_bytes is not null and used_bytes >= data_limit_bytes
          then 'limited' else 'active' end)`,
      })
      .where(sql<boolean>`status IN ('limited', 'expired') AND status = 'expired'`)
      .where((eb) => eb.or([eb("expire_at", "is", null), eb("expire_at", ">", nowTs)]))
      .returning(RETURNED)
      .execute();
    for (const row of extended.map(toRow)) {
      if (row.status === "limited") result.limited.push(row);
      else result.activated.push({ ...row, from: "expired" });
    }
    // 6. usage thresholds: only users at or past their next notice (the partial index users_usage_notice)
    const thresholds = [...new Set(options.thresholds)].sort((a, b) => b - a);
    const noticeDue = sql`data_limit_bytes > 0 AND used_bytes * 100 >= data_limit_bytes * next_notice_percent`;
    const reachedCase = sql<number>`(case ${sql.join(
      [
        ...thresholds.map(
          (p) => sql`when used_bytes * 100 >= data_limit_bytes * ${sql.lit(p)} then ${sql.lit(p)}`,
        ),
        sql`else 0`,
      ],
      sql` `,
    )} end)`;
    const above = (column: RawBuilder<number> | string) => {
      const ascending = [...thresholds].reverse();
      const ref = typeof column === "string" ? sql.ref(column) : column;
      const whens = ascending.map((p) => sql`when ${ref} < ${sql.lit(p)} then ${sql.lit(p)}`);
      return whens.length === 0 ? sql`null` : sql`(case ${sql.join(whens, sql` `)} else null end)`;
    };
    const noticed = await this.#update(
      "users_usage_notice",
      sql`notified_usage_percent = ${reachedCase}, next_notice_percent = ${above(reachedCase)}`,
      sql`${noticeDue} AND status IN ('active', 'limited') AND ${reachedCase} > notified_usage_percent`,
      ["notified_usage_percent"],
    );
    result.thresholds.push(
      ...noticed.map((row) => ({ ...toRow(row), percent: Number(row.notified_usage_percent) })),
    );
    // The rest of the index (no notice due: not active or limited, or nothing new reached): only the
    // rows whose next notice moves are rewritten (a row in the index has one, so never null here), in
    // batches within the tick's notice budget (TickOptions.noticeBudgetMs); a row re-aimed leaves the
    // index unless a notice is due, so the next batch starts where this one stopped.
    const stale = sql<boolean>`${noticeDue} AND coalesce(${above("notified_usage_percent")}, -1) <> next_notice_percent`;
    const noticeSize = Math.max(1, Math.floor(options.noticeBatch ?? NOTICE_BATCH));
    const hint = this.dialect === "sqlite" ? sql.raw(" INDEXED BY users_usage_notice") : sql``;
    const staleIds = sql`SELECT id FROM users${hint} WHERE ${stale} LIMIT ${sql.lit(noticeSize)}`;
    const noticeStarted = performance.now();
    for (;;) {
      const reaimed = await this.db
        .updateTable("users")
        .set({ next_notice_percent: above("notified_usage_percent") as RawBuilder<number> })
        .where(
          this.dialect === "postgres"
            ? sql<boolean>`id = ANY(ARRAY(${staleIds}))`
            : sql<boolean>`id IN (${staleIds})`,
        )
        .where(stale)
        .executeTakeFirst();
      if (Number(reaimed.numUpdatedRows) < noticeSize) break;
      if (performance.now() - noticeStarted >= (options.noticeBudgetMs ?? NOTICE_BUDGET_MS)) break;
    }
    // 7. expiring (the partial index users_expiring: active users not told about this expiry yet)
    if (options.expiringNoticeSeconds > 0) {
      const until = new Date(now.getTime() + options.expiringNoticeSeconds * 1000).toISOString();
      const rows = await this.#update(
        "users_expiring",
        sql`expiring_notified_at = ${nowTs}`,
        sql`status = 'active' AND expiring_notified_at IS NULL AND expire_at IS NOT NULL
          AND expire_at > ${nowTs} AND expire_at <= ${timestampParam(this.dialect, until)}`,
      );
      result.expiring.push(...rows.map(toRow));
    }
    return result;
  }

  /**
   * UPDATE users SET … WHERE … RETURNING, through the partial index whose predicate `where` repeats
   * (SQLite is told which: its planner would take users_status and read every active user).
   */
  async #update(index: string, set: RawBuilder<unknown>, where: RawBuilder<unknown>, extra: string[] = []) {
    const hint = this.dialect === "sqlite" ? sql.raw(` INDEXED BY ${index}`) : sql``;
    const columns = sql.raw([...RETURNED, ...extra].join(", "));
    const result = await sql<
      ReturnedRow & Record<string, unknown>
    >`UPDATE users${hint} SET ${set} WHERE ${where}
      RETURNING ${columns}`.execute(this.db);
    return result.rows;
  }

  /** The rows notifications tell about, for users changed elsewhere (on-hold clocks started by traffic). */
  async rowsOf(ids: readonly string[]): Promise<LifecycleRow[]> {
    const out: LifecycleRow[] = [];
    for (const part of chunks(ids, 5000)) {
      const rows = await this.db.selectFrom("users").select(RETURNED).where("id", "in", part).execute();
      out.push(...rows.map(toRow));
    }
    return out;
  }

  /** Periods without a next boundary (set by a write, or a rolling month just reset): counted from now. */
  async #fillNextResets(now: Date): Promise<void> {
    for (;;) {
      const rows = await this.db
        .selectFrom("users")
        .select(["id", "data_limit_reset", "created_at"])
        .where("data_limit_reset", "<>", sql.lit("no_reset"))
        .where("next_reset_at", "is", null)
        // In the index's order: users_next_reset_unset is then the plan whatever the statistics say
        // (after a bulk change they may claim 40 % of the rows match, and a sequential scan read all
        // 1,000,000 rows to find none: 250 ms a tick on PostgreSQL).
        .orderBy("id")
        .limit(5000)
        .execute();
      if (rows.length === 0) return;
      for (const part of chunks(rows)) {
        const whens = part.map((row) => {
          const next = nextResetAt(row.data_limit_reset, read.timestamp(row.created_at), now) as Date;
          return sql`when ${row.id} then ${timestampParam(this.dialect, next.toISOString())}`;
        });
        await this.db
          .updateTable("users")
          .set({ next_reset_at: sql<string>`(case id ${sql.join(whens, sql` `)} end)` })
          .where(
            "id",
            "in",
            part.map((row) => row.id),
          )
          .execute();
      }
      if (rows.length < 5000) return;
    }
  }
}

type ReturnedRow = {
  id: string;
  name: string;
  status: UserStatus;
  used_bytes: number | string;
  data_limit_bytes: number | string | null;
  expire_at: string | Date | null;
};

function toRow(row: ReturnedRow): LifecycleRow {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    used_bytes: read.bigint(row.used_bytes),
    data_limit_bytes: read.optionalBigint(row.data_limit_bytes),
    expire_at: read.optionalTimestamp(row.expire_at),
  };
}
