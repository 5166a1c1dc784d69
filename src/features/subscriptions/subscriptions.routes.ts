// GET /sub/{user_id} (and HEAD): the public subscription that client apps poll (no bearer token).
// The hottest route: a cached answer is sent without a promise, one shared logger at warn or
// quieter instead of a child per request, and no per-request log lines.
import type { FastifyBaseLogger, FastifyReply } from "fastify";
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { CacheStats } from "./subscriptions.schemas.ts";
import type { SubscriptionResponse, SubscriptionsService } from "./subscriptions.service.ts";

// Not a uuid format: a malformed id is 404 like an unknown one, never 400.
const Params = Type.Object({ user_id: Type.String() }, { additionalProperties: false });

export function subscriptionsRoutes(app: App, subscriptions: SubscriptionsService): void {
  const logger = quietLogger(app.log);
  app.get(
    "/sub/:user_id",
    {
      config: { auth: false, guardInput: false }, // any malformed id is a 404 like an unknown one
      childLoggerFactory: () => logger,
      schema: {
        tags: ["subscription"],
        summary: "The user's share links, one per line, standard base64 (public)",
        description:
          "ETag on every answer; If-None-Match with it gives 304 without a body. HEAD gives the headers only.",
        security: [],
        params: Params,
        produces: ["text/plain"],
        response: {
          200: Type.String({ description: "base64 of the links joined by \\n" }),
          304: Type.Null({ description: "Not Modified: If-None-Match matched the current ETag" }),
          404: Type.Unsafe<unknown>({ $ref: "Problem#" }),
        },
      },
    },
    (request, reply) => {
      const id = request.params.user_id;
      const ifNoneMatch = request.headers["if-none-match"];
      // Over HTTP the fast path (fast-path.ts) asked the index already; asking again costs a lookup.
      const cached = subscriptions.cached(id, ifNoneMatch);
      if (cached !== undefined) return send(reply, cached);
      return subscriptions.respond(id, ifNoneMatch).then((response) => send(reply, response));
    },
  );
}

/** GET /api/subscriptions/cache (admin): what the subscription index holds and how well it serves. */
export function subscriptionCacheRoutes(app: App, subscriptions: SubscriptionsService): void {
  app.get(
    "/api/subscriptions/cache",
    {
      schema: {
        tags: ["subscription"],
        summary: "Statistics of this instance's subscriptions in memory",
        response: { 200: CacheStats, ...problems() },
      },
    },
    () => {
      const stats = subscriptions.stats();
      return {
        entries: stats.entries,
        bytes: stats.bytes,
        budget_bytes: stats.budgetBytes,
        hits: stats.hits,
        misses: stats.misses,
        not_stored: stats.notStored,
        layouts: stats.layouts,
        stale_layouts: stats.staleLayouts,
      };
    },
  );
}

function send(reply: FastifyReply, response: SubscriptionResponse): FastifyReply {
  const { headers } = response;
  for (let i = 0; i + 1 < headers.length; i += 2) reply.header(headers[i] as string, headers[i + 1]);
  return reply.code(response.status).send(response.body);
}

/** Request logging ("incoming request", "request completed") is info: this route logs warnings and worse. */
function quietLogger(logger: FastifyBaseLogger): FastifyBaseLogger {
  const levels = { warn: 40, error: 50, fatal: 60 } as const;
  const current = logger.level as keyof typeof levels | string;
  const isQuieter = current in levels || current === "silent";
  return logger.child({ route: "/sub/:user_id" }, { level: isQuieter ? current : "warn" });
}
