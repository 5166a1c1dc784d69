// Plans (issue 49): CRUD, a user created from a plan (the fields Enrolment passes on), a renewal with a
// plan, and the lifecycle job's next plan: applied once to a user who is limited or expired, then
// told (webhook user.plan_applied, audit users.next_plan_applied). The once-only guarantee is the
// repository's guarded UPDATE; the status change re-admits the user on the cores through the same
// userStatusChanged a write emits (provisioning follows at once).
import type { Logger } from "pino";
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import type { Actor } from "../../lib/http.ts";
import { trimName } from "../../lib/names.ts";
import { can, checkAllowedGroups, checkAllowedPlan } from "../../lib/roles.ts";
import type { AuditService } from "../audit/audit.service.ts";
import type { QuotasRepository, QuotaTx } from "../users/quotas.repository.ts";
import type { User, UserCreateRequest } from "../users/users.schemas.ts";
import type { UsersService } from "../users/users.service.ts";
import { type CreationFields, creationFields, renewal } from "./apply.ts";
import type { PlansRepository } from "./plans.repository.ts";
import type { Plan, PlanCreate, PlanUpdate } from "./plans.schemas.ts";

/** The groups feature, as plans use it (wired in deps.ts). */
export interface PlanGroups {
  checkGroupIds(groupIds: readonly string[]): Promise<void>;
  groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>>;
  setUserGroups(userId: string, groupIds: readonly string[]): Promise<void>;
}

export type NotifyPlan = (type: "user.plan_applied", data: Record<string, unknown>) => Promise<void>;

/**
 * Fields a plan decides: a create with plan_id may not give them too (as PasarGuard's templates). The
 * dashboard's copy (web/src/pages/users/planDecides.ts) is held equal by test/web/plan-decides.test.ts.
 */
export const PLAN_FIELDS = [
  "status",
  "data_limit_bytes",
  "data_limit_reset",
  "expire_at",
  "on_hold_duration_seconds",
  "on_hold_timeout_at",
  "ip_limit",
  "device_limit",
  "group_ids",
] as const;

/** What a create from a plan may give besides the plan: none of the plan's fields. */
export type PlanRequest = { plan_id?: string } & Partial<
  Pick<UserCreateRequest, (typeof PLAN_FIELDS)[number]>
>;

/** Users handed their next plan per statement batch of one tick. */
const NEXT_PLAN_BATCH = 500;

export class PlansService {
  constructor(
    private readonly repo: PlansRepository,
    private readonly users: UsersService,
    private readonly groups: PlanGroups,
    private readonly audit: Pick<AuditService, "record">,
    private readonly logger: Pick<Logger, "warn" | "info">,
    private readonly notify: NotifyPlan = async () => {},
    private readonly changes?: Changes,
    private readonly now: () => Date = () => new Date(),
    /** Resellers' quotas (docs/RESELLERS.md): a renewal's new data limit counts against the owner's. */
    private readonly quotas?: QuotasRepository,
  ) {}

  /** Runs a write that may grow the owner's totals within their quotas (none wired: as is). */
  #withinQuotas<T>(ownerId: string | null | undefined, work: (db?: QuotaTx) => Promise<T>): Promise<T> {
    return this.quotas === undefined ? work() : this.quotas.withinQuotas([ownerId], work);
  }

  list(): Promise<Plan[]> {
    return this.repo.list();
  }

  get(id: string): Promise<Plan> {
    return this.repo.getPlan(id);
  }

  async create(input: PlanCreate): Promise<Plan> {
    const { name, group_ids, ...fields } = input;
    checkOnHold(fields);
    const groupIds = unique(group_ids ?? []);
    await this.groups.checkGroupIds(groupIds);
    const id = await this.repo.insert(trimName(name), fields, this.#now());
    if (groupIds.length > 0) await this.repo.setGroups(id, groupIds);
    return this.repo.getPlan(id);
  }

  async update(id: string, input: PlanUpdate): Promise<Plan> {
    const current = await this.repo.getPlan(id);
    const { name, group_ids, ...fields } = input;
    checkOnHold({ ...current, ...fields });
    const groupIds = group_ids === undefined ? undefined : unique(group_ids);
    if (groupIds !== undefined) await this.groups.checkGroupIds(groupIds);
    await this.repo.update(id, name === undefined ? undefined : trimName(name), fields, this.#now());
    if (groupIds !== undefined) await this.repo.setGroups(id, groupIds);
    return this.repo.getPlan(id);
  }

  async delete(id: string): Promise<void> {
    await this.repo.getPlan(id);
    await this.repo.delete(id);
  }

  /** 400 naming `path` when the plan does not exist (a user's next_plan_id). */
  async checkPlanId(planId: string, path: string): Promise<void> {
    const known = await this.repo.existingIds([planId.toLowerCase()]);
    if (!known.has(planId.toLowerCase())) {
      throw new ValidationError("the plan asked for does not exist", [{ path, message: "no such plan" }]);
    }
  }

  /**
   * POST /api/users with plan_id: the plan's lifecycle fields and groups. The body may not give those
   * fields as well (400 naming each): a plan is the whole offer, as PasarGuard's user templates are.
   */
  async creation(request: PlanRequest): Promise<{ fields: CreationFields; groupIds: string[]; plan: Plan }> {
    const planId = request.plan_id as string;
    const given = PLAN_FIELDS.filter((field) => request[field] !== undefined);
    if (given.length > 0) {
      throw new ValidationError(
        "a user created from a plan takes these fields from the plan",
        given.map((field) => ({ path: `body.${field}`, message: "set by the plan; not with plan_id" })),
      );
    }
    const plan = await this.repo.findPlan(planId.toLowerCase());
    if (plan === undefined) {
      throw new ValidationError("the plan asked for does not exist", [
        { path: "body.plan_id", message: "no such plan" },
      ]);
    }
    return { fields: creationFields(plan, this.now()), groupIds: plan.group_ids, plan };
  }

  /**
   * POST /api/users/{id}/renew: the plan's numbers now, its groups joined (none left). As `actor`: the
   * plan among their allowed plans, its groups among their allowed groups, and the new data limit
   * within the owner's quotas (checked and written in one locked transaction, docs/RESELLERS.md).
   */
  async renew(userId: string, planId: string, actor: Actor): Promise<User> {
    const { role } = actor;
    const user = await this.users.get(userId);
    checkAllowedPlan(planId, actor.allowedPlanIds);
    const plan = await this.repo.findPlan(planId.toLowerCase());
    if (plan === undefined) {
      throw new ValidationError("the plan asked for does not exist", [
        { path: "body.plan_id", message: "no such plan" },
      ]);
    }
    if (plan.group_ids.length > 0 && !can(role, "access.write")) {
      throw new ForbiddenError(`the ${role} role may not renew with a plan that joins groups (access.write)`);
    }
    checkAllowedGroups(plan.group_ids, actor.allowedGroupIds);
    const now = this.now();
    const values = renewal(plan, user, now);
    await this.#withinQuotas(user.owner_admin_id, (db) =>
      this.repo.applyPlan(user.id, values, now.toISOString(), undefined, db),
    );
    await this.#joinGroups(user.id, plan);
    if (values.status !== user.status) await this.changes?.emit("userStatusChanged", [user.id]);
    const renewed = await this.users.get(user.id);
    await this.notify("user.plan_applied", {
      user: eventUser(renewed),
      plan: { id: plan.id, name: plan.name },
      previous_status: user.status,
      via: "renew",
    });
    return renewed;
  }

  /**
   * The lifecycle job's step after each tick: every limited or expired user with a next plan gets it,
   * once. Returns how many were moved. A failure with one user is logged and the others go on.
   */
  async applyDueNextPlans(): Promise<number> {
    let applied = 0;
    for (let round = 0; round < 100; round++) {
      const due = await this.repo.listDueNextPlans(NEXT_PLAN_BATCH);
      const plans = new Map<string, Plan | undefined>();
      for (const { userId, planId } of due) {
        if (!plans.has(planId)) plans.set(planId, await this.repo.findPlan(planId));
        const plan = plans.get(planId);
        if (plan === undefined) continue; // deleted meanwhile: the foreign key clears next_plan_id
        const moved = this.#applyNext(userId, plan);
        if (await moved.catch((error: unknown) => this.#failed(userId, error))) applied++;
      }
      if (due.length < NEXT_PLAN_BATCH) break;
    }
    return applied;
  }

  async #applyNext(userId: string, plan: Plan): Promise<boolean> {
    const user = await this.users.get(userId);
    const now = this.now();
    const values = renewal(plan, user, now);
    // The once-only point: only the tick whose guarded UPDATE changes the row goes on. Within the
    // owner's quotas: a next plan whose data limit would exceed them is refused (logged) and waits.
    const applied = await this.#withinQuotas(user.owner_admin_id, async (db) => {
      // The owner's allowed plans and groups may have narrowed since next_plan_id was set (or the
      // plan's groups changed): a plan no longer among them, or one joining a group outside them, is
      // refused (logged, as a quota refusal is) and waits for the lists, the plan or the next plan to
      // change. Read here, under the owner's lock, not with the due list: an owner narrowing them
      // while the tick runs is seen. A user moved to another owner meanwhile waits for the next tick,
      // which locks the new owner.
      const owner = await this.repo.ownerLists(userId, db);
      if (owner === undefined || owner.ownerAdminId !== user.owner_admin_id) return false;
      checkAllowedPlan(plan.id, owner.allowedPlanIds);
      checkAllowedGroups(plan.group_ids, owner.allowedGroupIds);
      return this.repo.applyPlan(userId, values, now.toISOString(), plan.id, db);
    });
    if (!applied) return false;
    if (values.status !== user.status) await this.changes?.emit("userStatusChanged", [userId]);
    await this.#joinGroups(userId, plan);
    const moved = await this.users.get(userId);
    await this.notify("user.plan_applied", {
      user: eventUser(moved),
      plan: { id: plan.id, name: plan.name },
      previous_status: user.status,
      via: "next_plan",
    });
    await this.audit.record(
      {
        actor: { kind: "system", id: null, name: "lifecycle", tokenId: null },
        action: "users.next_plan_applied",
        method: null,
        route: null,
        targets: { user_id: userId, plan_id: plan.id, previous_status: user.status, status: moved.status },
        ip: null,
        requestId: null,
      },
      200,
    );
    this.logger.info({ job: "lifecycle", user_id: userId, plan_id: plan.id }, "next plan applied");
    return true;
  }

  #failed(userId: string, error: unknown): false {
    this.logger.warn({ job: "lifecycle", user_id: userId, err: error }, "next plan not applied");
    return false;
  }

  async #joinGroups(userId: string, plan: Plan): Promise<void> {
    if (plan.group_ids.length === 0) return;
    const current = (await this.groups.groupIdsOf([userId])).get(userId) ?? [];
    const wanted = [...new Set([...current, ...plan.group_ids])];
    if (wanted.length > current.length) await this.groups.setUserGroups(userId, wanted);
  }

  #now(): string {
    return this.now().toISOString();
  }
}

/** A user in an event: without the subscription URL (a credential). */
function eventUser(user: User): Omit<User, "subscription_url"> {
  const { subscription_url: _url, ...rest } = user;
  return rest;
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

function checkOnHold(plan: { start_on_hold?: boolean; duration_days?: number | null }): void {
  if (plan.start_on_hold === true && (plan.duration_days ?? null) === null) {
    throw new ValidationError("a plan that starts on hold needs duration_days", [
      { path: "body.duration_days", message: "required when start_on_hold is true" },
    ]);
  }
}
