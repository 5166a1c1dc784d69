// Plans in SQL: the plan and its groups (plan_groups), and the one write that applies a plan to a user
// (a renewal, or the lifecycle job's next plan). Users' grants and memberships are other features'.
import { randomUUID } from "node:crypto";
import { type Kysely, type Selectable, sql } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database, PlansTable } from "../../db/types.ts";
import { UniqueViolationError } from "../../db/unique-violation.ts";
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import { readIdList } from "../../lib/roles.ts";
import type { Plan, PlanCreate } from "./plans.schemas.ts";

/** What applying a plan writes to a user (the lifecycle's bookkeeping follows, as on any write). */
export type PlanApplication = {
  status: UserStatus;
  data_limit_bytes: number | null;
  data_limit_reset: DataLimitReset;
  expire_at: string | null;
  ip_limit: number | null;
  device_limit: number | null;
  /** used_bytes starts over at 0 (last_reset_at now). */
  isUsageReset: boolean;
};

/** A user the lifecycle job owes a next plan: limited or expired with next_plan_id set. */
export type DueNextPlan = { userId: string; planId: string };

/**
 * A user's owner and that owner's allowed plans and groups (admins.allowed_plan_ids and
 * allowed_group_ids; null: any, or no owner).
 */
export type OwnerLists = {
  ownerAdminId: string | null;
  allowedPlanIds: string[] | null;
  allowedGroupIds: string[] | null;
};

type PlanFields = Omit<PlanCreate, "name" | "group_ids">;

export class PlansRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<Plan[]> {
    const rows = await this.db.selectFrom("plans").selectAll().orderBy("name").execute();
    return this.#withGroups(rows);
  }

  async findPlan(id: string): Promise<Plan | undefined> {
    const row = await this.db.selectFrom("plans").selectAll().where("id", "=", id).executeTakeFirst();
    return row === undefined ? undefined : (await this.#withGroups([row]))[0];
  }

  async getPlan(id: string): Promise<Plan> {
    const plan = await this.findPlan(id);
    if (plan === undefined) throw new NotFoundError("plan", id);
    return plan;
  }

  async insert(name: string, fields: PlanFields, now: string): Promise<string> {
    const id = randomUUID();
    await this.db
      .insertInto("plans")
      .values({
        id,
        name,
        data_limit_bytes: fields.data_limit_bytes ?? null,
        data_limit_reset: fields.data_limit_reset ?? "no_reset",
        duration_days: fields.duration_days ?? null,
        start_on_hold: fields.start_on_hold ?? false,
        on_hold_timeout_days: fields.on_hold_timeout_days ?? null,
        ip_limit: fields.ip_limit ?? null,
        device_limit: fields.device_limit ?? null,
        renew_from: fields.renew_from ?? "expiry",
        reset_usage: fields.reset_usage ?? false,
        created_at: now,
        updated_at: now,
      })
      .execute()
      .catch((error: unknown) => {
        throw nameTaken(error, name);
      });
    return id;
  }

  async update(id: string, name: string | undefined, fields: PlanFields, now: string): Promise<boolean> {
    const result = await this.db
      .updateTable("plans")
      .set({ ...(name === undefined ? {} : { name }), ...columnsOf(fields), updated_at: now })
      .where("id", "=", id)
      .executeTakeFirst()
      .catch((error: unknown) => {
        throw nameTaken(error, name ?? "");
      });
    return Number(result.numUpdatedRows) > 0;
  }

  /** The plan's groups become exactly these. */
  async setGroups(id: string, groupIds: readonly string[]): Promise<void> {
    await this.db
      .transaction()
      .execute(async (trx) => {
        await trx.deleteFrom("plan_groups").where("plan_id", "=", id).execute();
        if (groupIds.length === 0) return;
        await trx
          .insertInto("plan_groups")
          .values(groupIds.map((group_id) => ({ plan_id: id, group_id })))
          .execute();
      })
      .catch((error: unknown) => {
        throw goneMeanwhile(error);
      });
  }

  /** Users with it as their next plan lose it (the foreign key sets it null). */
  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("plans").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async existingIds(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .selectFrom("plans")
      .select("id")
      .where("id", "in", [...ids])
      .execute();
    return new Set(rows.map((row) => row.id));
  }

  /** Up to `limit` limited or expired users with a next plan (the partial index users_next_plan). */
  async listDueNextPlans(limit: number): Promise<DueNextPlan[]> {
    const rows = await this.db
      .selectFrom("users")
      .select(["id", "next_plan_id"])
      .where("next_plan_id", "is not", null)
      .where(sql<boolean>`status IN ('limited', 'expired')`)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((row) => ({ userId: row.id, planId: row.next_plan_id as string }));
  }

  /**
   * The user's owner and the owner's allowed lists as they are now, read in `db`: in the quota
   * transaction, which holds the owner's row (PostgreSQL: FOR UPDATE; SQLite: one writer), so an owner
   * narrowing the lists either commits before this read or waits for the write it guards.
   * Undefined when the user is gone.
   */
  async ownerLists(userId: string, db: Kysely<Database> = this.db): Promise<OwnerLists | undefined> {
    const row = await db
      .selectFrom("users as u")
      .leftJoin("admins as a", "a.id", "u.owner_admin_id")
      .select(["u.owner_admin_id", "a.allowed_plan_ids", "a.allowed_group_ids"])
      .where("u.id", "=", userId)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      ownerAdminId: row.owner_admin_id,
      allowedPlanIds: readIdList(row.allowed_plan_ids),
      allowedGroupIds: readIdList(row.allowed_group_ids),
    };
  }

  /**
   * Writes the plan's numbers to the user; false when the user is gone. With `nextPlanId` this is the
   * lifecycle's once-only step: it changes the user only while they are still limited or expired with
   * that next plan, and clears it in the same statement, so of two ticks racing exactly one applies it.
   */
  async applyPlan(
    userId: string,
    values: PlanApplication,
    now: string,
    nextPlanId?: string,
    db: Kysely<Database> = this.db,
  ): Promise<boolean> {
    let query = db
      .updateTable("users")
      .set({
        status: values.status,
        data_limit_bytes: values.data_limit_bytes,
        data_limit_reset: values.data_limit_reset,
        expire_at: values.expire_at,
        ip_limit: values.ip_limit,
        device_limit: values.device_limit,
        on_hold_duration_seconds: null,
        on_hold_timeout_at: null,
        // The lifecycle's bookkeeping, as UsersRepository.updateUser keeps it for a new limit and expiry.
        next_reset_at: null,
        notified_usage_percent: 0,
        next_notice_percent: 0,
        expiring_notified_at: null,
        ...(values.isUsageReset ? { used_bytes: 0, last_reset_at: now } : {}),
        ...(nextPlanId === undefined ? {} : { next_plan_id: null }),
        updated_at: now,
      })
      .where("id", "=", userId);
    if (nextPlanId !== undefined) {
      query = query
        .where("next_plan_id", "=", nextPlanId)
        .where(sql<boolean>`status IN ('limited', 'expired')`);
    }
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async #withGroups(rows: Selectable<PlansTable>[]): Promise<Plan[]> {
    if (rows.length === 0) return [];
    const groups = await this.db
      .selectFrom("plan_groups as pg")
      .innerJoin("groups as g", "g.id", "pg.group_id")
      .select(["pg.plan_id", "pg.group_id"])
      .where(
        "pg.plan_id",
        "in",
        rows.map((row) => row.id),
      )
      .orderBy("g.name")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      data_limit_bytes: read.optionalBigint(row.data_limit_bytes),
      data_limit_reset: row.data_limit_reset,
      duration_days: row.duration_days,
      start_on_hold: read.bool(row.start_on_hold),
      on_hold_timeout_days: row.on_hold_timeout_days,
      ip_limit: row.ip_limit,
      device_limit: row.device_limit,
      renew_from: row.renew_from === "now" ? "now" : "expiry",
      reset_usage: read.bool(row.reset_usage),
      group_ids: groups.filter((g) => g.plan_id === row.id).map((g) => g.group_id),
      created_at: read.timestamp(row.created_at),
      updated_at: read.timestamp(row.updated_at),
    }));
  }
}

/** The plan's columns among the fields given (undefined: left as they are). */
function columnsOf(fields: PlanFields) {
  const out: Partial<Record<keyof PlanFields, unknown>> = {};
  for (const [key, value] of Object.entries(fields))
    if (value !== undefined) out[key as keyof PlanFields] = value;
  return out as Partial<PlanFields>;
}

function nameTaken(error: unknown, name: string): unknown {
  if (error instanceof UniqueViolationError && error.is("plans", ["name"])) {
    return new ConflictError(`a plan named ${JSON.stringify(name)} exists`, "plan_name_taken");
  }
  return error;
}

/** A group deleted between the check and this write: a 409 to retry, not a 500. */
function goneMeanwhile(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "23503" && code !== "SQLITE_CONSTRAINT_FOREIGNKEY") return error;
  return new ConflictError("a group of the plan was deleted meanwhile; try again", "conflict");
}
