// /api/groups (issue 49): groups of inbounds and their members, in CRUD order.
import { Type } from "typebox";
import { type App, ownerScope, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import {
  Group,
  GroupChangeResult,
  GroupCreate,
  GroupInboundParams,
  GroupInboundsAdd,
  GroupMemberParams,
  GroupUpdate,
  MemberPage,
  MembersChange,
  MembersChangeResult,
  MembersQuery,
} from "./groups.schemas.ts";
import type { GroupsService } from "./groups.service.ts";

export function groupsRoutes(app: App, groups: GroupsService): void {
  const tags = ["groups"];

  app.get(
    "/api/groups",
    {
      schema: {
        tags,
        summary:
          "List groups by name, with their inbounds and member counts (an admin whose users.read scope is own counts only their users)",
        response: { 200: Type.Array(Group), ...problems() },
      },
    },
    async (request) => groups.list(ownerScope(principalOf(request), "users.read")),
  );

  app.get(
    "/api/groups/:id",
    {
      schema: {
        tags,
        summary: "Get one group",
        params: IdParams,
        response: { 200: Group, ...problems(404) },
      },
    },
    async (request) => groups.get(request.params.id, ownerScope(principalOf(request), "users.read")),
  );

  app.post(
    "/api/groups",
    {
      schema: {
        tags,
        summary: "Create a group of inbounds (any servers); users join it through members or group_ids",
        body: GroupCreate,
        response: { 201: Group, ...problems(409, 422) },
      },
    },
    async (request, reply) => reply.code(201).send(await groups.create(request.body)),
  );

  app.put(
    "/api/groups/:id",
    {
      schema: {
        tags,
        summary:
          "Rename, or set the whole set of inbounds: added ones are granted to every member, left-out ones revoked (unless a member holds them directly or through another group)",
        params: IdParams,
        body: GroupUpdate,
        response: { 200: GroupChangeResult, ...problems(404, 409, 422) },
      },
    },
    async (request) => groups.update(request.params.id, request.body),
  );

  app.delete(
    "/api/groups/:id",
    {
      schema: {
        tags,
        summary:
          "Delete a group: its members lose its inbounds unless they hold them directly or through another group",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await groups.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/api/groups/:id/inbounds",
    {
      schema: {
        tags,
        summary: "Add inbounds (a new server's, say) to the group: every member gets them on the cores",
        params: IdParams,
        body: GroupInboundsAdd,
        response: { 200: GroupChangeResult, ...problems(404, 422) },
      },
    },
    async (request) => groups.addInbounds(request.params.id, request.body.inbound_ids),
  );

  app.delete(
    "/api/groups/:id/inbounds/:inbound_id",
    {
      schema: {
        tags,
        summary:
          "Remove an inbound from the group: revoked from the members who hold it only through this group",
        params: GroupInboundParams,
        response: { 200: GroupChangeResult, ...problems(404) },
      },
    },
    async (request) => groups.removeInbound(request.params.id, request.params.inbound_id),
  );

  app.get(
    "/api/groups/:id/members",
    {
      schema: {
        tags,
        summary: "The group's members by user id, after a cursor",
        params: IdParams,
        querystring: MembersQuery,
        response: { 200: MemberPage, ...problems(404) },
      },
    },
    async (request) =>
      groups.listMembers(request.params.id, request.query, ownerScope(principalOf(request), "users.read")),
  );

  app.post(
    "/api/groups/:id/members",
    {
      schema: {
        tags,
        summary:
          "Add users, by ids (up to 10,000) or by the user list's filters: they get the group's inbounds on the cores",
        params: IdParams,
        body: MembersChange,
        response: { 200: MembersChangeResult, ...problems(404, 422) },
      },
    },
    async (request) => groups.addMembers(request.params.id, request.body, principalOf(request)),
  );

  app.post(
    "/api/groups/:id/members/remove",
    {
      schema: {
        tags,
        summary:
          "Remove users, by ids or by the user list's filters: they lose what they held only through this group",
        params: IdParams,
        body: MembersChange,
        response: { 200: MembersChangeResult, ...problems(404) },
      },
    },
    async (request) => groups.removeMembers(request.params.id, request.body, principalOf(request)),
  );

  app.delete(
    "/api/groups/:id/members/:user_id",
    {
      schema: {
        tags,
        summary: "Remove one user from the group",
        params: GroupMemberParams,
        response: { 200: MembersChangeResult, ...problems(404) },
      },
    },
    async (request) => groups.removeMember(request.params.id, request.params.user_id),
  );
}
