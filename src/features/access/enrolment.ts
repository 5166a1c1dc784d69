// Users created with their grants in one request (POST /api/users with inbound_ids, POST
// /api/users/bulk): what the dashboard's one "New user" dialog and an operator making users for a
// reseller need. Every inbound is looked up and its capacity checked before anything is created;
// if a create or a grant still fails, the users made by this request are deleted again (which
// takes any grant off its core) and the error is answered: all or nothing, as the caller sees it.
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import type { Actor } from "../../lib/http.ts";
import { can, checkAllowedGroups, checkAllowedPlan, type Role } from "../../lib/roles.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import type {
  BulkUserCreate,
  BulkUserResult,
  User,
  UserCreate,
  UserCreateRequest,
  UserUpdateRequest,
} from "../users/users.schemas.ts";
import type { UsersService } from "../users/users.service.ts";
import type { AccessService } from "./access.service.ts";
import type { BulkGrants } from "./bulk-grant.ts";

/** Joining groups (the groups feature, wired in deps.ts: it sits above access). */
export interface GroupJoins {
  /** 400 with the path of a group that does not exist. */
  checkGroupIds(groupIds: readonly string[]): Promise<void>;
  setUserGroups(userId: string, groupIds: readonly string[]): Promise<void>;
  /** Many users join one group (a bulk create from a plan with groups). */
  addMembers(groupId: string, change: { user_ids: string[] }): Promise<unknown>;
}

/** Plans (the plans feature, wired in deps.ts): a user created from one, a next plan checked. */
export interface PlanSource {
  /** The plan's fields and groups for a create with plan_id; 400 when the body gives them too. */
  creation(
    request: Partial<UserCreateRequest> & { plan_id?: string },
  ): Promise<{ fields: Partial<UserCreate>; groupIds: string[] }>;
  /** 400 naming `path` when there is no such plan. */
  checkPlanId(planId: string, path: string): Promise<void>;
}

export class Enrolment {
  constructor(
    private readonly users: UsersService,
    private readonly inbounds: InboundsRepository,
    private readonly access: AccessService,
    private readonly bulkGrants: BulkGrants,
    private readonly sync: CoreSync,
    private readonly groups?: GroupJoins,
    private readonly plans?: PlanSource,
  ) {}

  /** The actor owns the new user (within their quotas, docs/RESELLERS.md). */
  async createUser(request: UserCreateRequest, actor: Actor): Promise<User> {
    const { inbound_ids, group_ids, plan_id, ...fields } = request;
    checkPlans([plan_id, fields.next_plan_id], actor);
    const fromPlan = plan_id === undefined ? undefined : await this.plans?.creation(request);
    const input: UserCreate = { ...fields, ...fromPlan?.fields };
    if (input.next_plan_id) await this.plans?.checkPlanId(input.next_plan_id, "body.next_plan_id");
    const inbounds = await this.#inbounds(inbound_ids ?? [], 1, actor.role);
    const wantedGroups = fromPlan?.groupIds ?? group_ids ?? [];
    const groupIds = wantedGroups.length > 0 ? await this.#groupIds(wantedGroups, actor) : [];
    const user = await this.users.create(input, actor.adminId, groupIds);
    await this.#undoOnFailure([user.id], async () => {
      for (const inbound of inbounds) {
        await this.access.grant(inbound.server_id, inbound.id, { user_id: user.id });
      }
      if (groupIds.length > 0) await this.groups?.setUserGroups(user.id, groupIds);
    });
    return user;
  }

  /** PUT /api/users/{id}: the fields, then group_ids (when given) as the whole new set of groups. */
  async updateUser(id: string, request: UserUpdateRequest, actor: Actor): Promise<User> {
    const { group_ids, ...fields } = request;
    checkPlans([fields.next_plan_id], actor);
    const groupIds = group_ids === undefined ? undefined : await this.#groupIds(group_ids, actor);
    await this.users.get(id);
    if (fields.next_plan_id) await this.plans?.checkPlanId(fields.next_plan_id, "body.next_plan_id");
    const user = await this.users.update(id, fields);
    if (groupIds !== undefined) await this.groups?.setUserGroups(id, groupIds);
    return user;
  }

  async #groupIds(ids: readonly string[], actor: Actor): Promise<string[]> {
    const { role } = actor;
    if (!can(role, "access.write")) {
      throw new ForbiddenError(`the ${role} role may not change groups (access.write)`);
    }
    const unique = [...new Set(ids.map((id) => id.toLowerCase()))];
    checkAllowedGroups(unique, actor.allowedGroupIds);
    if (unique.length > 0) await this.groups?.checkGroupIds(unique);
    return unique;
  }

  /**
   * POST /api/users/bulk: `count` users, optionally from a plan (its fields and groups, as one create
   * from a plan). The batch is written in one transaction within the actor's quotas: refused whole
   * (403 naming the quota) or made whole; a grant failing afterwards deletes them all again.
   */
  async createMany(request: BulkUserCreate, actor: Actor): Promise<BulkUserResult> {
    const { prefix, count, start = 1, inbound_ids, plan_id, ...fields } = request;
    checkPlans([plan_id, fields.next_plan_id], actor);
    const fromPlan = plan_id === undefined ? undefined : await this.plans?.creation(request);
    const input: Omit<UserCreate, "name"> = { ...fields, ...fromPlan?.fields };
    if (input.next_plan_id) await this.plans?.checkPlanId(input.next_plan_id, "body.next_plan_id");
    const inbounds = await this.#inbounds(inbound_ids ?? [], count, actor.role);
    const wantedGroups = fromPlan?.groupIds ?? [];
    const groupIds = wantedGroups.length > 0 ? await this.#groupIds(wantedGroups, actor) : [];
    const names = numberedNames(prefix.trim(), start, count);
    const created: { id: string; name: string }[] = [];
    const grants: BulkUserResult["grants"] = [];
    const users = await this.users.createMany(
      names.map((name) => ({ ...input, name }) satisfies UserCreate),
      actor.adminId,
      groupIds,
    );
    created.push(...users.map((user) => ({ id: user.id, name: user.name })));
    await this.#undoOnFailure(created, async () => {
      const userIds = created.map((u) => u.id);
      for (const groupId of groupIds) await this.groups?.addMembers(groupId, { user_ids: userIds });
      for (const inbound of inbounds) {
        const report = await this.bulkGrants.grant(inbound.server_id, inbound.id, { user_ids: userIds });
        grants.push({ server_inbound_id: inbound.id, granted: report.granted, sync: report.sync });
      }
    });
    return { created: created.length, users: created, grants };
  }

  /** The inbounds asked for, each found and with room for `adding` users; nothing is created yet. */
  async #inbounds(ids: string[], adding: number, role: Role): Promise<InboundRow[]> {
    if (ids.length === 0) return [];
    if (!can(role, "access.write")) {
      throw new ForbiddenError(`the ${role} role may not grant inbounds (access.write)`);
    }
    const unique = [...new Set(ids.map((id) => id.toLowerCase()))];
    const found: InboundRow[] = [];
    const missing: { path: string; message: string }[] = [];
    for (const id of unique) {
      const inbound = await this.inbounds.findInboundById(id);
      if (inbound === undefined) {
        missing.push({
          path: `body.inbound_ids.${ids.findIndex((x) => x.toLowerCase() === id)}`,
          message: "no such inbound",
        });
      } else found.push(inbound);
    }
    if (missing.length > 0) throw new ValidationError("an inbound asked for does not exist", missing);
    for (const inbound of found) {
      await this.sync.checkCapacity(inbound, adding, {
        path: "body.inbound_ids",
        message: "holds one user only",
      });
    }
    return found;
  }

  /** Runs `work`; if it throws, deletes the users it made (their grants go off the cores) and rethrows. */
  async #undoOnFailure(created: string[] | { id: string }[], work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      for (const user of created) {
        const id = typeof user === "string" ? user : user.id;
        await this.users.delete(id).catch(() => undefined);
      }
      throw error;
    }
  }
}

/** prefix + start … start+count-1, zero-padded to the width of the last number. */
export function numberedNames(prefix: string, start: number, count: number): string[] {
  const width = String(start + count - 1).length;
  return Array.from({ length: count }, (_, i) => `${prefix}${String(start + i).padStart(width, "0")}`);
}

/** 403 naming allowed_plan_ids when a plan given is outside the actor's allowed plans. */
function checkPlans(planIds: readonly (string | null | undefined)[], actor: Actor): void {
  for (const planId of planIds) if (planId) checkAllowedPlan(planId, actor.allowedPlanIds);
}
