// /api/servers/{server_id}/inbounds/{inbound_id}/hosts: an inbound's other addresses, in CRUD order,
// then the reorder.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { Host, HostCreate, HostOrder, HostParams, HostUpdate } from "./hosts.schemas.ts";
import type { HostsService } from "./hosts.service.ts";
import { InboundParams } from "./inbounds.schemas.ts";

export function hostsRoutes(app: App, hosts: HostsService): void {
  const tags = ["hosts"];
  const base = "/api/servers/:server_id/inbounds/:inbound_id/hosts";

  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the inbound's hosts in order (none: the one implicit host of the inbound itself)",
        params: InboundParams,
        response: { 200: Type.Array(Host), ...problems(404) },
      },
    },
    async (request) => hosts.list(request.params.server_id, request.params.inbound_id),
  );

  app.get(
    `${base}/:host_id`,
    {
      schema: {
        tags,
        summary: "Get one host",
        params: HostParams,
        response: { 200: Host, ...problems(404) },
      },
    },
    async ({ params }) => hosts.get(params.server_id, params.inbound_id, params.host_id),
  );

  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Add a host after the last one: each enabled host is one entry in every format",
        params: InboundParams,
        body: HostCreate,
        response: { 201: Host, ...problems(404, 422) },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await hosts.create(request.params.server_id, request.params.inbound_id, request.body)),
  );

  app.put(
    `${base}/:host_id`,
    {
      schema: {
        tags,
        summary: "Replace the fields present",
        params: HostParams,
        body: HostUpdate,
        response: { 200: Host, ...problems(404, 422) },
      },
    },
    async ({ params, body }) => hosts.update(params.server_id, params.inbound_id, params.host_id, body),
  );

  app.delete(
    `${base}/:host_id`,
    {
      schema: {
        tags,
        summary: "Delete a host (the ones after it move up)",
        params: HostParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async ({ params }, reply) => {
      await hosts.delete(params.server_id, params.inbound_id, params.host_id);
      return reply.code(204).send(null);
    },
  );

  app.put(
    `${base}/order`,
    {
      schema: {
        tags,
        summary: "Reorder: ids names every host of the inbound once, in the new order",
        params: InboundParams,
        body: HostOrder,
        response: { 200: Type.Array(Host), ...problems(404, 422) },
      },
    },
    async ({ params, body }) => hosts.reorder(params.server_id, params.inbound_id, body.ids),
  );
}
