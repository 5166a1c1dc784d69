// Grants (POST/DELETE …/inbounds/{inbound_id}/users, POST …/users/bulk), a user's access records,
// and the three client configuration endpoints of the seed.
import { Type } from "typebox";
import { type App, ownerScope, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { InboundParams } from "../inbounds/inbounds.schemas.ts";
import { User } from "../users/users.schemas.ts";
import {
  AccessQuery,
  AccessRecord,
  BulkGrantCreate,
  BulkGrantResult,
  ClientConfig,
  GrantCreate,
  GrantParams,
  QrQuery,
  UserIdParams,
  UserInboundParams,
} from "./access.schemas.ts";
import type { AccessService } from "./access.service.ts";
import type { BulkGrants } from "./bulk-grant.ts";

export function accessRoutes(app: App, access: AccessService, bulk: BulkGrants): void {
  const tags = ["access"];

  app.post(
    "/api/users/:id/revoke-subscription",
    {
      schema: {
        tags: ["users"],
        summary:
          "Revoke the user's subscription: a new URL, and new credentials on every grant, pushed to the cores",
        description:
          "The old /sub/{sub_token} is 404 and old links stop connecting at once; the user record carries the new subscription_url. A grant whose core cannot be reached is pending with its new credential.",
        params: IdParams,
        response: {
          200: Type.Object({ user: User, grants: Type.Array(AccessRecord) }),
          ...problems(404),
        },
      },
    },
    async (request) => access.revokeSubscription(request.params.id),
  );

  app.post(
    "/api/servers/:server_id/inbounds/:inbound_id/users",
    {
      schema: {
        tags,
        summary: "Grant a user (existing, or new from name) access to the inbound and add them on the core",
        params: InboundParams,
        body: GrantCreate,
        response: { 201: AccessRecord, ...problems(404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { server_id, inbound_id } = request.params;
      return reply
        .code(201)
        .send(await access.grant(server_id, inbound_id, request.body, principalOf(request)));
    },
  );

  app.post(
    "/api/servers/:server_id/inbounds/:inbound_id/users/bulk",
    {
      schema: {
        tags,
        summary:
          "Grant the inbound to many existing users at once (up to 10,000): stored in one transaction, then pushed to the core",
        params: InboundParams,
        body: BulkGrantCreate,
        response: { 200: BulkGrantResult, ...problems(404, 422) },
      },
    },
    async (request) =>
      bulk.grant(
        request.params.server_id,
        request.params.inbound_id,
        request.body,
        ownerScope(principalOf(request), "access.write"),
      ),
  );

  app.delete(
    "/api/servers/:server_id/inbounds/:inbound_id/users/:email",
    {
      schema: {
        tags,
        summary:
          "Revoke a grant ({email}: its proxy_user_id or the user's uuid) and remove the user from the core",
        description:
          "A grant a group also gives stays (only its is_own is cleared); one held through a group only is 409 granted_by_group",
        params: GrantParams,
        response: { 204: Type.Null(), ...problems(404, 409) },
      },
    },
    async (request, reply) => {
      const { server_id, inbound_id, email } = request.params;
      await access.revoke(server_id, inbound_id, email, ownerScope(principalOf(request), "access.write"));
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/api/users/:id/access",
    {
      schema: {
        tags,
        summary: "A user's access records; include_uris=true adds uri, protocol, server_name, inbound_tag",
        params: IdParams,
        querystring: AccessQuery,
        response: { 200: Type.Array(AccessRecord), ...problems(404) },
      },
    },
    async (request) => access.listForUser(request.params.id, request.query.include_uris ?? false),
  );

  app.get(
    "/api/users/:user_id/configs",
    {
      schema: {
        tags,
        summary: "The user's client configurations (what the subscription holds)",
        params: UserIdParams,
        querystring: QrQuery,
        response: { 200: Type.Array(ClientConfig), ...problems(404) },
      },
    },
    async (request) => access.userConfigs(request.params.user_id, request.query.include_qr),
  );

  app.get(
    "/api/users/:user_id/access/:inbound_id/config",
    {
      schema: {
        tags,
        summary: "The client configuration of the user's grant on one inbound",
        params: UserInboundParams,
        querystring: QrQuery,
        response: { 200: ClientConfig, ...problems(404, 422) },
      },
    },
    async (request) =>
      access.userInboundConfig(request.params.user_id, request.params.inbound_id, request.query.include_qr),
  );

  app.get(
    "/api/servers/:server_id/inbounds/:inbound_id/configs",
    {
      schema: {
        tags,
        summary: "One client configuration per user of the inbound",
        params: InboundParams,
        querystring: QrQuery,
        response: { 200: Type.Array(ClientConfig), ...problems(404) },
      },
    },
    async (request) =>
      access.inboundConfigs(request.params.server_id, request.params.inbound_id, request.query.include_qr),
  );
}
