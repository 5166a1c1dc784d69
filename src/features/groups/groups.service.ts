// Groups (issue 49): every change is written first (the group's inbounds, its members), then each
// inbound it touches is converged (access/group-grants.ts): grants made for covered users, grants
// held only through groups revoked where no group covers the user any more. The grants are the one
// mechanism the reconciler, links, usage and the lifecycle read.
import { IDS_PER_STATEMENT } from "../../db/dialect.ts";
import { NotFoundError, ValidationError } from "../../lib/errors.ts";
import { type Actor, ownerScope } from "../../lib/http.ts";
import { checkAllowedGroups } from "../../lib/roles.ts";
import type { ConvergeResult, GroupGrants } from "../access/group-grants.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { UserFiltersRepository } from "../users/user-filters.repository.ts";
import { listFilterOf } from "../users/user-list.service.ts";
import type { UsersService } from "../users/users.service.ts";
import type { GroupsRepository } from "./groups.repository.ts";
import type {
  Group,
  GroupChangeResult,
  GroupCreate,
  GroupUpdate,
  MemberPage,
  MembersChange,
  MembersChangeResult,
  MembersQuery,
} from "./groups.schemas.ts";

export class GroupsService {
  constructor(
    private readonly repo: GroupsRepository,
    private readonly inbounds: InboundsRepository,
    private readonly grants: GroupGrants,
    private readonly users: UsersService,
    private readonly filters: UserFiltersRepository,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** `ownerId`: member_count counts only that admin's users (an own-scoped reader). */
  list(ownerId?: string): Promise<Group[]> {
    return this.repo.list(ownerId);
  }

  get(id: string, ownerId?: string): Promise<Group> {
    return this.repo.getGroup(id, ownerId);
  }

  /** A new group has no members yet, so its inbounds grant nothing until users join. */
  async create(input: GroupCreate): Promise<Group> {
    const inbounds = await this.#inbounds(input.inbound_ids ?? [], "body.inbound_ids");
    const id = await this.repo.insert(input.name.trim(), this.#now());
    await this.repo.addInbounds(
      id,
      inbounds.map((inbound) => inbound.id),
    );
    return this.repo.getGroup(id);
  }

  /** inbound_ids, when given, is the whole new set: the difference is granted and revoked. */
  async update(id: string, input: GroupUpdate): Promise<GroupChangeResult> {
    const startedMs = performance.now();
    await this.repo.getGroup(id);
    if (input.name !== undefined) await this.repo.rename(id, input.name.trim(), this.#now());
    let changed: string[] = [];
    if (input.inbound_ids !== undefined) {
      const wanted = await this.#inbounds(input.inbound_ids, "body.inbound_ids");
      const held = await this.repo.listInboundIds(id);
      const wantedIds = new Set(wanted.map((inbound) => inbound.id));
      const gone = held.filter((inboundId) => !wantedIds.has(inboundId));
      await this.#checkRoom(
        id,
        wanted.filter((inbound) => !held.includes(inbound.id)),
      );
      const added = await this.repo.addInbounds(id, [...wantedIds]);
      await this.repo.removeInbounds(id, gone);
      changed = [...added, ...gone];
      if (changed.length > 0) await this.repo.touch(id, this.#now());
    }
    const results = await this.#convergeAll(changed);
    return { group: await this.repo.getGroup(id), inbounds: results, duration_ms: since(startedMs) };
  }

  /** A new server's inbounds join in one call; every member gets them on the cores. */
  async addInbounds(id: string, inboundIds: readonly string[]): Promise<GroupChangeResult> {
    const startedMs = performance.now();
    await this.repo.getGroup(id);
    const inbounds = await this.#inbounds(inboundIds, "body.inbound_ids");
    const held = new Set(await this.repo.listInboundIds(id));
    await this.#checkRoom(
      id,
      inbounds.filter((inbound) => !held.has(inbound.id)),
    );
    const added = await this.repo.addInbounds(
      id,
      inbounds.map((inbound) => inbound.id),
    );
    if (added.length > 0) await this.repo.touch(id, this.#now());
    const results = await this.#convergeAll(added);
    return { group: await this.repo.getGroup(id), inbounds: results, duration_ms: since(startedMs) };
  }

  /** Members lose the inbound unless they hold it directly or through another group. */
  async removeInbound(id: string, inboundId: string): Promise<GroupChangeResult> {
    const startedMs = performance.now();
    await this.repo.getGroup(id);
    if ((await this.repo.removeInbounds(id, [inboundId])) === 0) {
      throw new NotFoundError("inbound of the group", inboundId);
    }
    await this.repo.touch(id, this.#now());
    const results = await this.#convergeAll([inboundId]);
    return { group: await this.repo.getGroup(id), inbounds: results, duration_ms: since(startedMs) };
  }

  /** The group goes; its members keep only what they hold directly or through other groups. */
  async delete(id: string): Promise<void> {
    await this.repo.getGroup(id);
    const inboundIds = await this.repo.listInboundIds(id);
    const members = await this.repo.listMemberIds(id);
    await this.repo.delete(id);
    for (const inboundId of inboundIds) await this.grants.converge(inboundId, members);
  }

  /** `ownerId`: only that admin's users among the members (an own-scoped reader). */
  async listMembers(id: string, query: MembersQuery, ownerId?: string): Promise<MemberPage> {
    await this.repo.getGroup(id);
    const items = await this.repo.listMembers(id, query.after, query.limit, ownerId);
    const last = items.at(-1);
    return {
      items,
      total: await this.repo.countMembers(id, ownerId),
      next_cursor: items.length === query.limit && last !== undefined ? last.id : null,
    };
  }

  /** As `actor` (when given): only their own users with an own access.write, into allowed groups. */
  async addMembers(id: string, change: MembersChange, actor?: Actor): Promise<MembersChangeResult> {
    if (actor !== undefined) checkAllowedGroups([id], actor.allowedGroupIds);
    return this.#changeMembers(id, change, "add", actor && ownerScope(actor, "access.write"));
  }

  async removeMembers(id: string, change: MembersChange, actor?: Actor): Promise<MembersChangeResult> {
    return this.#changeMembers(id, change, "remove", actor && ownerScope(actor, "access.write"));
  }

  async removeMember(id: string, userId: string): Promise<MembersChangeResult> {
    await this.repo.getGroup(id);
    await this.users.get(userId);
    return this.#changeMembers(id, { user_ids: [userId] }, "remove");
  }

  groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>> {
    return this.repo.groupIdsOf(userIds);
  }

  /** Checks group_ids before a user is created or changed: 400 with the path of an unknown group. */
  async checkGroupIds(groupIds: readonly string[]): Promise<void> {
    const known = await this.repo.existingIds(groupIds);
    const missing = groupIds.flatMap((groupId, index) =>
      known.has(groupId) ? [] : [{ path: `body.group_ids.${index}`, message: "no such group" }],
    );
    if (missing.length > 0) throw new ValidationError("a group asked for does not exist", missing);
  }

  /** The user's groups become exactly `groupIds`: joins and leaves, each converged. */
  async setUserGroups(userId: string, groupIds: readonly string[]): Promise<void> {
    await this.checkGroupIds(groupIds);
    const current = (await this.repo.groupIdsOf([userId])).get(userId) ?? [];
    const wanted = new Set(groupIds);
    for (const groupId of wanted) {
      if (!current.includes(groupId)) await this.#changeMembers(groupId, { user_ids: [userId] }, "add");
    }
    for (const groupId of current) {
      if (!wanted.has(groupId)) await this.#changeMembers(groupId, { user_ids: [userId] }, "remove");
    }
  }

  async #changeMembers(
    id: string,
    change: MembersChange,
    how: "add" | "remove",
    ownerId?: string,
  ): Promise<MembersChangeResult> {
    const startedMs = performance.now();
    await this.repo.getGroup(id);
    const userIds = await this.#selected(change, ownerId);
    if (how === "add") {
      for (const inboundId of await this.repo.listInboundIds(id)) {
        const inbound = await this.inbounds.findInboundById(inboundId);
        if (inbound !== undefined) {
          await this.grants.checkRoom(inbound, userIds.length, "body.user_ids");
        }
      }
    }
    const changed =
      how === "add" ? await this.repo.addMembers(id, userIds) : await this.repo.removeMembers(id, userIds);
    // Read after the write: an inbound added meanwhile is either seen here or sees these members.
    const inboundIds = await this.repo.listInboundIds(id);
    const results: ConvergeResult[] = [];
    for (const inboundId of inboundIds) results.push(await this.grants.converge(inboundId, userIds));
    return { matched: userIds.length, changed, inbounds: results, duration_ms: since(startedMs) };
  }

  /** The existing users the change names, by ids or by the list's filters (`ownerId`'s only). */
  async #selected(change: MembersChange, ownerId: string | undefined): Promise<string[]> {
    if ((change.user_ids === undefined) === (change.filter === undefined)) {
      throw new ValidationError("give user_ids or filter, exactly one of the two", [
        { path: "body", message: "exactly one of user_ids and filter" },
      ]);
    }
    if (change.user_ids !== undefined) {
      const wanted = [...new Set(change.user_ids.map((userId) => userId.toLowerCase()))];
      const known = await this.users.ownedIds(wanted, ownerId);
      return wanted.filter((userId) => known.has(userId));
    }
    const filter = listFilterOf(change.filter ?? {});
    if (ownerId !== undefined) filter.ownerAdminId = ownerId;
    const out: string[] = [];
    for (let after: string | undefined; ; ) {
      const chunk = await this.filters.idsAfter(filter, after, IDS_PER_STATEMENT);
      out.push(...chunk);
      if (chunk.length < IDS_PER_STATEMENT) return out;
      after = chunk.at(-1);
    }
  }

  async #convergeAll(inboundIds: readonly string[]): Promise<ConvergeResult[]> {
    const results: ConvergeResult[] = [];
    for (const inboundId of inboundIds) results.push(await this.grants.converge(inboundId));
    return results;
  }

  /** Inbounds being added must hold every member (a V2Ray shadowsocks inbound holds one). */
  async #checkRoom(groupId: string, adding: readonly InboundRow[]): Promise<void> {
    if (adding.length === 0) return;
    const members = await this.repo.countMembers(groupId);
    for (const inbound of adding) await this.grants.checkRoom(inbound, members, "body.inbound_ids");
  }

  /** Each inbound found, or 400 with the path of the first one that does not exist. */
  async #inbounds(ids: readonly string[], path: string): Promise<InboundRow[]> {
    const found: InboundRow[] = [];
    const missing: { path: string; message: string }[] = [];
    for (const [index, id] of ids.entries()) {
      const inbound = await this.inbounds.findInboundById(id.toLowerCase());
      if (inbound === undefined) missing.push({ path: `${path}.${index}`, message: "no such inbound" });
      else found.push(inbound);
    }
    if (missing.length > 0) throw new ValidationError("an inbound asked for does not exist", missing);
    return found;
  }

  #now(): string {
    return this.now().toISOString();
  }
}

function since(startedMs: number): number {
  return Math.round(performance.now() - startedMs);
}
