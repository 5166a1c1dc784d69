// /api/admins: owners manage the team (permission admins.manage, features/admins/permissions.ts).
import { Type } from "typebox";
import { type App, principalOf } from "../../lib/http.ts";
import { IdParams, problems, Uuid } from "../../lib/schemas.ts";
import { ApiKey } from "../auth/auth.schemas.ts";
import { AdminCreate, AdminUpdate, AdminView } from "./admins.schemas.ts";
import type { AdminsService } from "./admins.service.ts";

const AdminKeyParams = Type.Object({ id: Uuid, key_id: Uuid }, { additionalProperties: false });

export function adminsRoutes(app: App, admins: AdminsService): void {
  app.get(
    "/api/admins",
    {
      schema: {
        tags: ["admins"],
        summary: "List admins",
        response: { 200: Type.Array(AdminView), ...problems(403) },
      },
    },
    async () => admins.list(),
  );

  app.post(
    "/api/admins",
    {
      schema: {
        tags: ["admins"],
        summary: "Create an admin with a role",
        body: AdminCreate,
        response: { 201: AdminView, ...problems(403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await admins.create(request.body)),
  );

  app.get(
    "/api/admins/:id",
    {
      schema: {
        tags: ["admins"],
        summary: "One admin",
        params: IdParams,
        response: { 200: AdminView, ...problems(403, 404) },
      },
    },
    async (request) => admins.get(request.params.id),
  );

  app.put(
    "/api/admins/:id",
    {
      schema: {
        tags: ["admins"],
        summary: "Change role, disable or enable, set a password, or remove the second factor",
        description:
          "The last active owner cannot be demoted or disabled (409 last_owner). Disabling or setting " +
          "a password ends the admin's sessions and API keys for good (re-enabling brings none back). " +
          "password and " +
          "reset_totp are for other admins: for your own id they are 409 cannot_reset_self " +
          "(use POST /api/auth/password and POST /api/auth/totp/disable).",
        params: IdParams,
        body: AdminUpdate,
        response: { 200: AdminView, ...problems(403, 404, 409) },
      },
    },
    async (request) => admins.update(principalOf(request), request.params.id, request.body),
  );

  app.get(
    "/api/admins/:id/api-keys",
    {
      schema: {
        tags: ["admins"],
        summary: "An admin's API keys (secrets are never shown again)",
        params: IdParams,
        response: { 200: Type.Array(ApiKey), ...problems(403, 404) },
      },
    },
    async (request) => admins.listApiKeys(request.params.id),
  );

  app.delete(
    "/api/admins/:id/api-keys/:key_id",
    {
      schema: {
        tags: ["admins"],
        summary: "Revoke an admin's API key",
        params: AdminKeyParams,
        response: { 204: Type.Null(), ...problems(403, 404) },
      },
    },
    async (request, reply) => {
      await admins.deleteApiKey(request.params.id, request.params.key_id);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    "/api/admins/:id",
    {
      schema: {
        tags: ["admins"],
        summary: "Delete an admin (their sessions and API keys go with them)",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(403, 404, 409) },
      },
    },
    async (request, reply) => {
      await admins.delete(principalOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
}
