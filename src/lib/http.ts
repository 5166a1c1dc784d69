// Types the route modules share: the Fastify instance with the TypeBox provider, the authenticated
// principal on each request, and the per-route `auth: false` flag for the few public routes.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";

/** Who made an authenticated request: an admin, through a login token or an API key. */
export type Principal = { adminId: string; tokenId: string; kind: "session" | "api_key" };

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
  interface FastifyContextConfig {
    /** false: reachable without a bearer token (token endpoint, docs, health, subscriptions) */
    auth?: boolean;
  }
}

export function principalOf(request: { principal: Principal | undefined }): Principal {
  if (request.principal === undefined) throw new Error("route reached without authentication");
  return request.principal;
}
