// /api/users: the seed's user endpoints, in CRUD order.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { ListQuery, SearchQuery, User, UserCreate, UserPage, UserUpdate } from "./users.schemas.ts";
import type { UsersService } from "./users.service.ts";

export function usersRoutes(app: App, users: UsersService): void {
  const tags = ["users"];

  app.get(
    "/api/users",
    {
      schema: {
        tags,
        summary: "List users, oldest first: by page, or after a cursor (as fast at any depth)",
        querystring: ListQuery,
        response: { 200: UserPage, ...problems() },
      },
    },
    async (request) => users.list(request.query),
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
    async (request) => users.search(request.query.q),
  );

  app.get(
    "/api/users/:id",
    {
      schema: { tags, summary: "Get one user", params: IdParams, response: { 200: User, ...problems(404) } },
    },
    async (request) => users.get(request.params.id),
  );

  app.post(
    "/api/users",
    { schema: { tags, summary: "Create a user", body: UserCreate, response: { 201: User, ...problems() } } },
    async (request, reply) => reply.code(201).send(await users.create(request.body)),
  );

  app.put(
    "/api/users/:id",
    {
      schema: {
        tags,
        summary: "Update the fields present; null clears comment or telegram_id",
        params: IdParams,
        body: UserUpdate,
        response: { 200: User, ...problems(404) },
      },
    },
    async (request) => users.update(request.params.id, request.body),
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
