// /api/users: the seed's user endpoints, in CRUD order.
import { Type } from "typebox";
import { type Actor, type App, ownerScope, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import type { UserBulkActions } from "./bulk-actions.service.ts";
import { isFilteredList, type UserListService } from "./user-list.service.ts";
import {
  BulkActionRequest,
  BulkActionResult,
  type BulkUserCreate,
  BulkUserCreate as BulkUserCreateSchema,
  BulkUserResult,
  ListQuery,
  OwnerChange,
  RenewRequest,
  SearchQuery,
  User,
  UserCreateRequest,
  UserPage,
  UserUpdateRequest,
} from "./users.schemas.ts";
import type { UsersService } from "./users.service.ts";

/** Creating users with their grants (the access feature's Enrolment; wired in app.ts). */
export interface UserEnrolment {
  createUser(request: UserCreateRequest, actor: Actor): Promise<User>;
  createMany(request: BulkUserCreate, actor: Actor): Promise<BulkUserResult>;
  updateUser(id: string, request: UserUpdateRequest, actor: Actor): Promise<User>;
}

/** The groups of users, shown as group_ids (the groups feature; wired in app.ts). */
export interface UserGroupIds {
  groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>>;
}

/** Renewing a user with a plan (the plans feature; wired in app.ts). */
export interface UserRenewal {
  renew(userId: string, planId: string, actor: Actor): Promise<User>;
}

export function usersRoutes(
  app: App,
  users: UsersService,
  tools: {
    lists: UserListService;
    bulk: UserBulkActions;
    enrol: UserEnrolment;
    groups: UserGroupIds;
    plans: UserRenewal;
  },
): void {
  const tags = ["users"];
  const withGroups = async <T extends User>(list: T[]): Promise<T[]> => {
    const groups = await tools.groups.groupIdsOf(list.map((user) => user.id));
    return list.map((user) => ({ ...user, group_ids: groups.get(user.id) ?? [] }));
  };
  const withGroupsOne = async (user: User): Promise<User> => (await withGroups([user]))[0] ?? user;

  app.get(
    "/api/users",
    {
      schema: {
        tags,
        summary:
          "List users, oldest first: by page, or after a cursor (as fast at any depth); filter by status, expiry and usage, sort by usage or expiry",
        querystring: ListQuery,
        response: { 200: UserPage, ...problems() },
      },
    },
    async (request) => {
      // An own-scoped reader's list is their users' list, whatever owner they ask for.
      const owner = ownerScope(principalOf(request), "users.read");
      const query = owner === undefined ? request.query : { ...request.query, owner_admin_id: owner };
      const page = isFilteredList(query) ? await tools.lists.list(query) : await users.list(query);
      return { ...page, items: await withGroups(page.items) };
    },
  );

  app.post(
    "/api/users/bulk-actions",
    {
      schema: {
        tags,
        summary:
          "One action over users given by ids (up to 10,000) or by the list's filters: extend expiry, add data, reset usage, set status, delete long-expired users; answers how many it changed",
        description:
          "extend_expiry and reset_usage need users.lifecycle (support may run them); add_data_limit, set_status and delete_expired need users.write",
        body: BulkActionRequest,
        response: { 200: BulkActionResult, ...problems(403) },
      },
    },
    async (request) => {
      const { action } = request.body;
      request.auditNotes = { bulk_action: action.type, selected_by: request.body.ids ? "ids" : "filter" };
      const result = await tools.bulk.run(request.body, principalOf(request));
      request.auditNotes.matched = String(result.matched);
      request.auditNotes.changed = String(result.changed);
      return result;
    },
  );

  app.get(
    "/api/users/search",
    {
      schema: {
        tags,
        summary: "Search by name (substring, case-insensitive), telegram_id or uuid; at most 100",
        querystring: SearchQuery,
        response: { 200: Type.Array(User), ...problems() },
      },
    },
    async (request) =>
      withGroups(await users.search(request.query.q, ownerScope(principalOf(request), "users.read"))),
  );

  app.get(
    "/api/users/:id",
    {
      schema: { tags, summary: "Get one user", params: IdParams, response: { 200: User, ...problems(404) } },
    },
    async (request) => withGroupsOne(await users.get(request.params.id)),
  );

  app.post(
    "/api/users",
    {
      schema: {
        tags,
        summary: "Create a user, optionally granting inbounds in the same request (inbound_ids)",
        description:
          "With inbound_ids every inbound is checked first (400 with the path of one that does not exist, 422 for one that holds a single user); a grant that still fails deletes the new user again. The grants' sync states are on GET /api/users/{id}/access",
        body: UserCreateRequest,
        response: { 201: User, ...problems(403, 422) },
      },
    },
    async (request, reply) => {
      const user = await tools.enrol.createUser(request.body, principalOf(request));
      return reply.code(201).send(await withGroupsOne(user));
    },
  );

  app.post(
    "/api/users/bulk",
    {
      schema: {
        tags,
        summary:
          "Create count users named prefix + number, with the same limits or from a plan, optionally granting inbounds",
        description:
          "Names are the prefix and a number from start (default 1), zero-padded to the width of the last (shop-001 … shop-100); at most 1,000 a request. The users are written in one transaction within the caller's quotas: a batch that would exceed one is refused whole (403 quota_exceeded naming it). All or nothing: a failure deletes the users this request made. docs/RESELLERS.md",
        body: BulkUserCreateSchema,
        response: { 201: BulkUserResult, ...problems(403, 422) },
      },
    },
    async (request, reply) => {
      const result = await tools.enrol.createMany(request.body, principalOf(request));
      request.auditNotes = { created: String(result.created) };
      return reply.code(201).send(result);
    },
  );

  app.put(
    "/api/users/:id",
    {
      schema: {
        tags,
        summary:
          "Update the fields present; null clears comment or telegram_id; group_ids sets the user's groups (granting and revoking their inbounds)",
        params: IdParams,
        body: UserUpdateRequest,
        response: { 200: User, ...problems(403, 404, 422) },
      },
    },
    async (request) =>
      withGroupsOne(await tools.enrol.updateUser(request.params.id, request.body, principalOf(request))),
  );

  app.patch(
    "/api/users/:id/owner",
    {
      schema: {
        tags,
        summary: "Move a user to another admin (owners only)",
        description:
          "The new owner's quotas apply: a move past max_users or max_data_bytes is 403 quota_exceeded (docs/RESELLERS.md)",
        params: IdParams,
        body: OwnerChange,
        response: { 200: User, ...problems(403, 404) },
      },
    },
    async (request) =>
      withGroupsOne(
        await users.setOwner(request.params.id, request.body.owner_admin_id?.toLowerCase() ?? null),
      ),
  );

  app.post(
    "/api/users/:id/renew",
    {
      schema: {
        tags,
        summary:
          "Renew the user with a plan: its limit, period and IP limit; expiry extended from the current one or from now, as the plan says; usage reset if the plan says so; its groups joined",
        description:
          "A limited or expired user the new numbers allow is active again at once (back on the cores). A plan with groups needs access.write too. docs/PLANS.md",
        params: IdParams,
        body: RenewRequest,
        response: { 200: User, ...problems(403, 404) },
      },
    },
    async (request) => {
      request.auditNotes = { plan_id: request.body.plan_id };
      const user = await tools.plans.renew(request.params.id, request.body.plan_id, principalOf(request));
      return withGroupsOne(user);
    },
  );

  app.delete(
    "/api/users/:id",
    {
      schema: {
        tags,
        summary: "Delete a user",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await users.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );
}
