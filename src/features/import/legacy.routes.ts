// The peers' old subscription URLs that /sub's own routes do not cover (issue 51): Marzban's
// /sub/{token}/info (the user's numbers as JSON, in Marzban's field names) and 3x-ui's /json/{subId}
// (the Xray JSON document). Public like /sub; an unknown, void or badly signed key is 404.
import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import { NotFoundError } from "../../lib/errors.ts";
import type { App } from "../../lib/http.ts";
import { bodyBytes } from "../subscriptions/answer.ts";
import type { SubscriptionsService } from "../subscriptions/subscriptions.service.ts";
import type { LegacySubscriptions } from "./legacy.service.ts";

const Params = Type.Object({ key: Type.String() }, { additionalProperties: false });
const config = { auth: false, guardInput: false } as const;
const notFound = { 404: Type.Unsafe<unknown>({ $ref: "Problem#" }) };

export function legacySubscriptionRoutes(
  app: App,
  legacy: LegacySubscriptions,
  subscriptions: SubscriptionsService,
): void {
  app.get(
    "/sub/:key/info",
    {
      config,
      schema: {
        tags: ["subscription"],
        summary:
          "An imported Marzban/PasarGuard subscription's user, as Marzban's /sub/{token}/info (public)",
        description: "key: a Marzban or PasarGuard subscription token, checked with the imported secret.",
        security: [],
        params: Params,
        response: {
          200: Type.Object({
            username: Type.String(),
            status: Type.String(),
            used_traffic: Type.Number(),
            lifetime_used_traffic: Type.Number(),
            data_limit: Type.Union([Type.Number(), Type.Null()]),
            data_limit_reset_strategy: Type.String(),
            expire: Type.Union([Type.Integer(), Type.Null()]),
            on_hold_expire_duration: Type.Union([Type.Integer(), Type.Null()]),
            on_hold_timeout: Type.Union([Type.String(), Type.Null()]),
            created_at: Type.Union([Type.String(), Type.Null()]),
            online_at: Type.Union([Type.String(), Type.Null()]),
            sub_updated_at: Type.Union([Type.String(), Type.Null()]),
          }),
          ...notFound,
        },
      },
    },
    async (request) => {
      const hit = await legacy.resolve(request.params.key, "marzban");
      const info = hit === undefined ? undefined : await legacy.info(hit);
      if (info === undefined) throw new NotFoundError("subscription");
      return info;
    },
  );
  app.get(
    "/json/:key",
    {
      config,
      schema: {
        tags: ["subscription"],
        summary: "An imported 3x-ui subscription as Xray JSON, as 3x-ui's /json/{subId} (public)",
        security: [],
        params: Params,
        produces: ["application/json"],
        response: { 200: Type.String(), 304: Type.Null(), ...notFound },
      },
    },
    async (request, reply) => {
      const hit = await legacy.resolve(request.params.key, "3x-ui");
      if (hit === undefined) throw new NotFoundError("subscription");
      const response = await subscriptions.respondFormat(
        hit.subToken,
        "xray-json",
        request.headers["if-none-match"],
        {
          userAgent: request.headers["user-agent"],
        },
      );
      return send(reply, response);
    },
  );
}

async function send(
  reply: FastifyReply,
  response: Awaited<ReturnType<SubscriptionsService["respondFormat"]>>,
): Promise<FastifyReply> {
  const { headers } = response;
  for (let i = 0; i + 1 < headers.length; i += 2) reply.header(headers[i] as string, headers[i + 1]);
  if (response.body === undefined) return reply.code(response.status).send();
  return reply.code(response.status).send(bodyBytes(response.body));
}
