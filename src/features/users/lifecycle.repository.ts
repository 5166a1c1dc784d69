// One lifecycle tick in set-based SQL: the steps of lifecycle.ts's decide(), each one UPDATE … WHERE
// … RETURNING over the users it changes (partial indexes of migration 0015 find them), in one
// transaction. The only per-user work in JavaScript is the next boundary of a period that has none
// yet (a write set the period) or a rolling month, written back with one UPDATE … CASE per 500 users.
import { type Kysely, sql } from "kysely";
import { type DialectName, plusSeconds, read, timestampParam } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";
import { type LifecycleOptions, nextResetAt } from "./lifecycle.ts";
import type { DataLimitReset, UserStatus } from "./users.schemas.ts";

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
  /** Usage thresholds are looked for only among users with traffic since then (null: everyone). */
  since: string | null;
};

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
      .where("status", "=", "on_hold")
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
      next_reset_at: sql<string>`(case data_limit_reset when 'day' then ${boundary("day")}
        when 'week' then ${boundary("week")} when 'month' then ${boundary("month")}
        when 'year' then ${boundary("year")} else null end)`,
    };
    const due = this.db
      .updateTable("users")
      .where("data_limit_reset", "<>", "no_reset")
      .where("next_reset_at", "<=", nowTs);
    const readmitted = await due
      .set({ ...reset, status: "active" })
      .where("status", "=", "limited")
      .returning(RETURNED)
      .execute();
    result.activated.push(...readmitted.map((row) => ({ ...toRow(row), from: "limited" as const })));
    const others = await due.set(reset).where("status", "<>", "limited").executeTakeFirst();
    result.resets = readmitted.length + Number(others.numUpdatedRows);
    await this.#fillNextResets(now);
    // 3. expiry
    const expired = await this.db
      .updateTable("users")
      .set({ status: "expired" })
      .where("status", "in", ["active", "limited"])
      .where("expire_at", "is not", null)
      .where("expire_at", "<=", nowTs)
      .returning(RETURNED)
      .execute();
    result.expired.push(...expired.map(toRow));
    // 4. limit (the same predicate as the partial index users_over_limit)
    const limited = await this.db
      .updateTable("users")
      .set({ status: "limited" })
      .where(
        sql<boolean>`status = 'active' AND data_limit_bytes IS NOT NULL AND used_bytes >= data_limit_bytes`,
      )
      .returning(RETURNED)
      .execute();
    result.limited.push(...limited.map(toRow));
    // 5. re-admission: room again, or a later (or no) expiry. The IN term repeats the partial
    // index users_limited's WHERE, which is what lets SQLite use it.
    const roomy = await this.db
      .updateTable("users")
      .set({ status: "active" })
      .where(sql<boolean>`status IN ('limited', 'expired') AND status = 'limited'`)
      .where((eb) =>
        eb.or([eb("data_limit_bytes", "is", null), eb("used_bytes", "<", eb.ref("data_limit_bytes"))]),
      )
      .returning(RETURNED)
      .execute();
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
    // 6. usage thresholds, the highest reached, once per period
    const thresholds = [...new Set(options.thresholds)].sort((a, b) => b - a);
    if (thresholds.length > 0) {
      const whens = thresholds.map(
        (p) => sql`when used_bytes * 100 >= data_limit_bytes * ${sql.lit(p)} then ${sql.lit(p)}`,
      );
      const reached = sql<number>`(case ${sql.join(whens, sql` `)} else 0 end)`;
      let query = this.db
        .updateTable("users")
        .set({ notified_usage_percent: reached })
        .where("status", "in", ["active", "limited"])
        .where("data_limit_bytes", ">", 0)
        .where(sql<boolean>`${reached} > notified_usage_percent`);
      if (options.since !== null) {
        query = query.where("online_at", ">=", timestampParam(this.dialect, options.since));
      }
      const rows = await query.returning([...RETURNED, "notified_usage_percent"]).execute();
      result.thresholds.push(
        ...rows.map((row) => ({ ...toRow(row), percent: Number(row.notified_usage_percent) })),
      );
    }
    // 7. expiring
    if (options.expiringNoticeSeconds > 0) {
      const until = new Date(now.getTime() + options.expiringNoticeSeconds * 1000).toISOString();
      const rows = await this.db
        .updateTable("users")
        .set({ expiring_notified_at: at })
        .where("status", "=", "active")
        .where("expiring_notified_at", "is", null)
        .where("expire_at", "is not", null)
        .where("expire_at", ">", nowTs)
        .where("expire_at", "<=", timestampParam(this.dialect, until))
        .returning(RETURNED)
        .execute();
      result.expiring.push(...rows.map(toRow));
    }
    return result;
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
        .where("data_limit_reset", "<>", "no_reset")
        .where("next_reset_at", "is", null)
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
