// Token login/logout and API keys. The bearer check itself is a hook in app.ts.
import { Type } from "typebox";
import { type App, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { ApiKey, ApiKeyCreate, CreatedApiKey, TokenRequest, TokenResponse } from "./auth.schemas.ts";
import type { AuthService } from "./auth.service.ts";

export function authRoutes(app: App, auth: AuthService): void {
  app.post(
    "/api/auth/token",
    {
      config: { auth: false },
      schema: {
        tags: ["auth"],
        summary: "Exchange an admin username and password for a bearer token",
        body: TokenRequest,
        response: { 200: TokenResponse, ...problems(429) },
      },
    },
    async (request) => auth.login(request.body.username, request.body.password, request.ip),
  );

  app.post(
    "/api/auth/logout",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke the token used for this request",
        response: { 204: Type.Null(), ...problems() },
      },
    },
    async (request, reply) => {
      await auth.logout(principalOf(request));
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/api/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "List API keys (secrets are never shown again)",
        response: { 200: Type.Array(ApiKey), ...problems() },
      },
    },
    async (request) => auth.listApiKeys(principalOf(request).adminId),
  );

  app.post(
    "/api/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "Create a named long-lived API key; the secret is in this response only",
        body: ApiKeyCreate,
        response: { 201: CreatedApiKey, ...problems() },
      },
    },
    async (request, reply) => {
      const key = await auth.createApiKey(
        principalOf(request).adminId,
        request.body.name,
        request.body.expires_in_days,
      );
      return reply.code(201).send(key);
    },
  );

  app.delete(
    "/api/api-keys/:id",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke an API key",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await auth.deleteApiKey(principalOf(request).adminId, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
