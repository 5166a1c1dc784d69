// POST /api/users/bulk-actions (issue 12 item 6): one action over a list of ids or over the list's
// filters, in chunks of IDS_PER_STATEMENT users, set-based in SQL (user-filters.repository.ts). The
// status is judged again in SQL as statusAfterWrite judges an admin's write; the ids whose status
// changed go to provisioning through userStatusChanged after each chunk. delete_expired takes each
// user's grants off the cores first, like DELETE /api/users/{id}.
import { IDS_PER_STATEMENT } from "../../db/dialect.ts";
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import { ownerScope, type Principal } from "../../lib/http.ts";
import type { Role } from "../../lib/roles.ts";
import { can } from "../../lib/roles.ts";
import type { QuotasRepository } from "./quotas.repository.ts";
import type { BulkNumbers, ListFilter, UserFiltersRepository } from "./user-filters.repository.ts";
import { listFilterOf } from "./user-list.service.ts";
import type { BulkActionRequest, BulkActionResult, User } from "./users.schemas.ts";
import type { NotifyUser, UserAccessRevoker } from "./users.service.ts";

const DAY_MS = 86_400_000;
/** Actions a role with users.lifecycle (support) may run; the others need users.write. */
const LIFECYCLE_ACTIONS = new Set(["extend_expiry", "reset_usage"]);

export class UserBulkActions {
  constructor(
    private readonly repo: UserFiltersRepository,
    private readonly revoker: UserAccessRevoker,
    private readonly events: Pick<Changes, "emit">,
    private readonly now: () => Date = () => new Date(),
    private readonly notify: NotifyUser = async () => {},
    /** Resellers' quotas: add_data_limit runs within the data quota of the users' owners. */
    private readonly quotas?: QuotasRepository,
    /** The users' groups, read before a delete so user.deleted still carries them. */
    private readonly groups?: { groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>> },
  ) {}

  /** The permission an action needs beyond the route's users.lifecycle. */
  static mayRun(role: Role, action: BulkActionRequest["action"]["type"]): boolean {
    return LIFECYCLE_ACTIONS.has(action) ? can(role, "users.lifecycle") : can(role, "users.write");
  }

  /**
   * Runs the action as `actor`: over their own users only when the permission the action needs is
   * held with scope own (ids of other admins' users are skipped like unknown ids).
   */
  async run(
    request: BulkActionRequest,
    actor: Role | Pick<Principal, "role" | "adminId" | "ownScope">,
  ): Promise<BulkActionResult> {
    const role = typeof actor === "string" ? actor : actor.role;
    const { action } = request;
    if (!UserBulkActions.mayRun(role, action.type)) {
      throw new ForbiddenError(`the ${role} role may not run ${action.type} (users.write)`);
    }
    const needs = LIFECYCLE_ACTIONS.has(action.type) ? "users.lifecycle" : "users.write";
    const owner = typeof actor === "string" ? undefined : ownerScope(actor, needs);
    return this.runOver(request, owner);
  }

  /** The action over the selected users; `owner`: only among that admin's users. */
  async runOver(request: BulkActionRequest, owner: string | undefined): Promise<BulkActionResult> {
    const { action } = request;
    if ((request.ids === undefined) === (request.filter === undefined)) {
      throw new ValidationError("give ids or filter, exactly one of the two", [
        {
          path: request.ids === undefined ? "body" : "body.filter",
          message: "exactly one of ids and filter",
        },
      ]);
    }
    const now = this.now();
    const result: BulkActionResult = { action: action.type, matched: 0, changed: 0, status_changed: 0 };
    for await (const chunk of this.#chunks(request, owner)) {
      result.matched += chunk.length;
      if (action.type === "delete_expired") {
        const cutoff = new Date(now.getTime() - action.expired_for_days * DAY_MS).toISOString();
        result.changed += await this.#deleteExpired(chunk, cutoff);
        continue;
      }
      const numbers = action as BulkNumbers;
      const { changed, statusChanged } =
        action.type === "add_data_limit" && this.quotas !== undefined
          ? await this.quotas.withinQuotas(await this.repo.ownersOf(chunk), (trx) =>
              this.repo.apply(chunk, numbers, now.toISOString(), trx),
            )
          : await this.repo.apply(chunk, numbers, now.toISOString());
      result.changed += changed;
      result.status_changed += statusChanged.length;
      if (statusChanged.length > 0) await this.events.emit("userStatusChanged", statusChanged);
    }
    return result;
  }

  /** The selected users' ids, IDS_PER_STATEMENT at a time (unknown ids skipped). */
  async *#chunks(request: BulkActionRequest, owner: string | undefined): AsyncGenerator<string[]> {
    if (request.ids !== undefined) {
      const ids = [...new Set(request.ids)];
      for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
        const chunk = await this.repo.existing(ids.slice(i, i + IDS_PER_STATEMENT), owner);
        if (chunk.length > 0) yield chunk;
      }
      return;
    }
    const filter: ListFilter = listFilterOf(request.filter ?? {});
    if (owner !== undefined) filter.ownerAdminId = owner;
    // Walked by id, so a user the action moves out of (or into) the filter is seen once at most.
    let after: string | undefined;
    for (;;) {
      const chunk = await this.repo.idsAfter(filter, after, IDS_PER_STATEMENT);
      if (chunk.length === 0) return;
      yield chunk;
      if (chunk.length < IDS_PER_STATEMENT) return;
      after = chunk.at(-1);
    }
  }

  async #deleteExpired(ids: readonly string[], cutoff: string): Promise<number> {
    const users = await this.repo.expiredAmong(ids, cutoff);
    const groups = await this.groups?.groupIdsOf(users.map((u) => u.id));
    for (const user of users) await this.revoker.revokeUser(user.id);
    const deleted = await this.repo.deleteMany(users.map((u) => u.id));
    for (const user of users) {
      const event = { ...withoutUrl(user), ...(groups ? { group_ids: groups.get(user.id) ?? [] } : {}) };
      await this.notify("user.deleted", { user: event });
    }
    return deleted;
  }
}

function withoutUrl(user: User): Omit<User, "subscription_url"> {
  const { subscription_url: _url, ...rest } = user;
  return rest;
}
