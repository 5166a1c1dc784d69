// GET /sub/{key} and /sub/{key}/{format} (and HEAD): the public subscription that client apps poll
// (no bearer token), and the page a browser gets. The fast path (fast-path.ts) answers from memory
// first; this route answers the rest (a user not in memory, uppercase keys, the page) the same way.
// The hottest route: a cached answer is sent without a promise, one shared logger at warn or
// quieter instead of a child per request, and no per-request log lines.
import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { NotFoundError } from "../../lib/errors.ts";
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { type Format, isFormat } from "../../lib/subscription-formats.ts";
import { deviceClaim } from "../devices/hwid.ts";
import { bodyBytes } from "./answer.ts";
import { isBrowser } from "./formats.ts";
import { pageLanguage, pagePolicy, renderPage } from "./page.ts";
import { CacheStats } from "./subscriptions.schemas.ts";
import type { SubscriptionsService } from "./subscriptions.service.ts";

// Not a uuid format: a malformed key is 404 like an unknown one, never 400.
const Params = Type.Object({ key: Type.String() }, { additionalProperties: false });
const FormatParams = Type.Object(
  { key: Type.String(), format: Type.String() },
  { additionalProperties: false },
);
const Query = Type.Object({ format: Type.Optional(Type.String()) });

/**
 * Another panel's subscription key (features/import: a Marzban/PasarGuard token, a 3x-ui subId) → the
 * user's sub_token, or undefined (404). Asked only for keys that are not ours: 32 hex characters or a
 * uuid are always our own keys, never another panel's (docs/SUBSCRIPTIONS.md).
 */
export type LegacyKeys = (key: string) => Promise<string | undefined>;

const OWN_KEY = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** Marzban's client types in /sub/{token}/{client_type}, as our formats. */
const CLIENT_TYPES: Record<string, Format> = {
  v2ray: "base64",
  clash: "mihomo",
  "clash-meta": "mihomo",
  "sing-box": "sing-box",
  "v2ray-json": "xray-json",
};

export function subscriptionsRoutes(
  app: App,
  subscriptions: SubscriptionsService,
  legacy?: LegacyKeys,
): void {
  const logger = quietLogger(app.log);
  const description =
    "key: the user's sub_token (32 hex characters) or, while the by-id URL is on, their uuid. The format is " +
    "the path's, else ?format=, else a browser (HTML Accept and a browser User-Agent) gets the page, else " +
    "the first User-Agent rule that matches (/api/subscription-settings), else base64. ETag on every answer; " +
    "If-None-Match with it gives 304 without a body. HEAD gives the headers only.";
  const responses = {
    200: Type.String({
      description: "base64 (links joined by \\n), plain links, mihomo YAML, sing-box JSON or Xray JSON",
    }),
    304: Type.Null({ description: "Not Modified: If-None-Match matched the current ETag" }),
    404: Type.Unsafe<unknown>({ $ref: "Problem#" }),
  };
  const config = { auth: false, guardInput: false } as const; // any malformed key is a 404 like an unknown one
  app.get(
    "/sub/:key",
    {
      config,
      childLoggerFactory: () => logger,
      schema: {
        tags: ["subscription"],
        summary: "The user's subscription in the format their app reads, or a page for people (public)",
        description,
        security: [],
        params: Params,
        querystring: Query,
        produces: ["text/plain", "text/yaml", "application/json", "text/html"],
        response: responses,
      },
    },
    async (request, reply) => answer(request, reply, await ownKey(request.params.key), request.query.format),
  );
  app.get(
    "/sub/:key/:format",
    {
      config,
      childLoggerFactory: () => logger,
      schema: {
        tags: ["subscription"],
        summary:
          "The user's subscription in one format: base64, links, mihomo, sing-box or xray-json (public)",
        description,
        security: [],
        params: FormatParams,
        produces: ["text/plain", "text/yaml", "application/json"],
        response: responses,
      },
    },
    async (request, reply) => {
      const { key, format } = request.params;
      if (OWN_KEY.test(key) || legacy === undefined) {
        if (!isFormat(format)) throw new NotFoundError("subscription format");
        return answer(request, reply, key, format);
      }
      const mapped = isFormat(format)
        ? format
        : Object.hasOwn(CLIENT_TYPES, format)
          ? CLIENT_TYPES[format]
          : undefined;
      if (mapped === undefined) throw new NotFoundError("subscription format");
      return answer(request, reply, await ownKey(key), mapped);
    },
  );

  /** Our key as it is; another panel's key as the sub_token it names (404 when it names none). */
  async function ownKey(key: string): Promise<string> {
    if (OWN_KEY.test(key) || legacy === undefined) return key;
    const token = await legacy(key);
    if (token === undefined) throw new NotFoundError("subscription");
    return token;
  }

  async function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    key: string,
    explicit: string | undefined,
  ) {
    if (explicit !== undefined && !isFormat(explicit)) throw new NotFoundError("subscription format");
    const userAgent = request.headers["user-agent"];
    if (explicit === undefined && isBrowser(request.headers.accept, userAgent)) {
      return page(request, reply, key);
    }
    if (!subscriptions.isReady) await subscriptions.loadSettings();
    const format = explicit ?? subscriptions.settings.chooser.byUserAgent(userAgent);
    const response = await subscriptions.respondFormat(key, format, request.headers["if-none-match"], {
      userAgent,
      device: deviceClaim(request.raw.rawHeaders),
    });
    const { headers } = response;
    for (let i = 0; i + 1 < headers.length; i += 2) reply.header(headers[i] as string, headers[i + 1]);
    if (response.body === undefined) return reply.code(response.status).send();
    return reply.code(response.status).send(bodyBytes(response.body));
  }

  async function page(request: FastifyRequest, reply: FastifyReply, key: string) {
    const data = await subscriptions.pageData(key);
    const base = subscriptions.settings.page.publicUrl ?? `${request.protocol}://${request.host}`;
    const nonce = randomBytes(16).toString("base64");
    const html = renderPage({
      ...data,
      url: `${base}/sub/${key.toLowerCase()}`,
      title: subscriptions.settings.page.title,
      note: subscriptions.settings.page.note,
      language: pageLanguage(request.headers["accept-language"]),
      nonce,
    });
    return reply
      .header("content-security-policy", pagePolicy(nonce))
      .header("cache-control", "no-store")
      .header("vary", "accept, user-agent, accept-language")
      .type("text/html; charset=utf-8")
      .send(html);
  }
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

/** Request logging ("incoming request", "request completed") is info: this route logs warnings and worse. */
function quietLogger(logger: FastifyBaseLogger): FastifyBaseLogger {
  const levels = { warn: 40, error: 50, fatal: 60 } as const;
  const current = logger.level as keyof typeof levels | string;
  const isQuieter = current in levels || current === "silent";
  return logger.child({ route: "/sub/:user_id" }, { level: isQuieter ? current : "warn" });
}
