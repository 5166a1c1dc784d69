// /api/servers: the seed's server endpoints, in CRUD order, then test and stats.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { Server, ServerCreate, ServerStats, ServerTestResult, ServerUpdate } from "./servers.schemas.ts";
import type { ServersService } from "./servers.service.ts";

export function serversRoutes(app: App, servers: ServersService): void {
  const tags = ["servers"];

  app.get(
    "/api/servers",
    { schema: { tags, summary: "List servers", response: { 200: Type.Array(Server), ...problems() } } },
    async () => servers.list(),
  );

  app.get(
    "/api/servers/:id",
    {
      schema: {
        tags,
        summary: "Get one server",
        params: IdParams,
        response: { 200: Server, ...problems(404) },
      },
    },
    async (request) => servers.get(request.params.id),
  );

  app.post(
    "/api/servers",
    {
      schema: {
        tags,
        summary: "Register a server (grpc_hostname defaults to hostname, grpc_port to 2053)",
        body: ServerCreate,
        response: { 201: Server, ...problems(409) },
      },
    },
    async (request, reply) => reply.code(201).send(await servers.create(request.body)),
  );

  app.put(
    "/api/servers/:id",
    {
      schema: {
        tags,
        summary: "Update the fields present; api_credentials null clears them",
        params: IdParams,
        body: ServerUpdate,
        response: { 200: Server, ...problems(404, 409) },
      },
    },
    async (request) => servers.update(request.params.id, request.body),
  );

  app.delete(
    "/api/servers/:id",
    {
      schema: {
        tags,
        summary: "Delete a server",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await servers.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/api/servers/:id/test",
    {
      schema: {
        tags,
        summary: "Try the core API now; never fails for core trouble, and updates status",
        params: IdParams,
        response: { 200: ServerTestResult, ...problems(404) },
      },
    },
    async (request) => servers.test(request.params.id),
  );

  app.get(
    "/api/servers/:id/stats",
    {
      schema: {
        tags,
        summary:
          "Uptime, core, memory and traffic counters (totals, per inbound, per user) read from the core",
        params: IdParams,
        response: { 200: ServerStats, ...problems(404, 502, 504) },
      },
    },
    async (request) => servers.stats(request.params.id),
  );
}
