// /api/servers/{server_id}/inbounds: the seed's inbound endpoints, in CRUD order.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { Inbound, InboundCreate, InboundParams, InboundUpdate, ServerParams } from "./inbounds.schemas.ts";
import type { InboundsService } from "./inbounds.service.ts";

export function inboundsRoutes(app: App, inbounds: InboundsService): void {
  const tags = ["inbounds"];

  app.get(
    "/api/servers/:server_id/inbounds",
    {
      schema: {
        tags,
        summary: "List a server's inbounds",
        params: ServerParams,
        response: { 200: Type.Array(Inbound), ...problems(404) },
      },
    },
    async (request) => inbounds.list(request.params.server_id),
  );

  app.get(
    "/api/servers/:server_id/inbounds/:inbound_id",
    {
      schema: {
        tags,
        summary: "Get one inbound",
        params: InboundParams,
        response: { 200: Inbound, ...problems(404) },
      },
    },
    async (request) => inbounds.get(request.params.server_id, request.params.inbound_id),
  );

  app.post(
    "/api/servers/:server_id/inbounds",
    {
      schema: {
        tags,
        summary:
          "Create an inbound from a template and put it on the core (sync_state says whether it got there)",
        params: ServerParams,
        body: InboundCreate,
        response: { 201: Inbound, ...problems(404, 409, 422) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await inbounds.create(request.params.server_id, request.body)),
  );

  app.put(
    "/api/servers/:server_id/inbounds/:inbound_id",
    {
      schema: {
        tags,
        summary:
          "Update the fields present and apply the inbound again (is_active false takes it off the core)",
        params: InboundParams,
        body: InboundUpdate,
        response: { 200: Inbound, ...problems(404, 409, 422) },
      },
    },
    async (request) => inbounds.update(request.params.server_id, request.params.inbound_id, request.body),
  );

  app.delete(
    "/api/servers/:server_id/inbounds/:inbound_id",
    {
      schema: {
        tags,
        summary: "Take the inbound off the core and delete it with its grants",
        params: InboundParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await inbounds.delete(request.params.server_id, request.params.inbound_id);
      return reply.code(204).send(null);
    },
  );
}
