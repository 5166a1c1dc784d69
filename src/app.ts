// buildApp(deps): the Fastify application with every route, the bearer-token hook and the
// problem+json error mapping. It never listens; main.ts does, tests use inject().
import { createServer } from "node:http";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, type FastifyRequest } from "fastify";
import type { Deps } from "./deps.ts";
import { accessRoutes } from "./features/access/access.routes.ts";
import { adminsRoutes } from "./features/admins/admins.routes.ts";
import { routePermission, routeUserReach } from "./features/admins/permissions.ts";
import { auditRoutes } from "./features/audit/audit.routes.ts";
import { beginAudit, finishAudit, isAudited } from "./features/audit/audit-hooks.ts";
import { authRoutes } from "./features/auth/auth.routes.ts";
import { certificatesRoutes } from "./features/certificates/certificates.routes.ts";
import { dashboardRoutes } from "./features/dashboard/dashboard.routes.ts";
import { devicesRoutes } from "./features/devices/devices.routes.ts";
import { fairUseRoutes } from "./features/fairuse/fairuse.routes.ts";
import { groupsRoutes } from "./features/groups/groups.routes.ts";
import { healthRoutes } from "./features/health/health.routes.ts";
import { importRoutes } from "./features/import/import.routes.ts";
import { legacySubscriptionRoutes } from "./features/import/legacy.routes.ts";
import { hostsRoutes } from "./features/inbounds/hosts.routes.ts";
import { inboundsRoutes } from "./features/inbounds/inbounds.routes.ts";
import { metricsRoutes } from "./features/metrics/metrics.routes.ts";
import { nodesRoutes } from "./features/nodes/nodes.routes.ts";
import { webhooksRoutes } from "./features/notifications/webhooks.routes.ts";
import { overviewRoutes } from "./features/overview/overview.routes.ts";
import { plansRoutes } from "./features/plans/plans.routes.ts";
import { serversRoutes } from "./features/servers/servers.routes.ts";
import { subscriptionSettingsRoutes } from "./features/subscription-settings/subscription-settings.routes.ts";
import { withCacheFastPath } from "./features/subscriptions/fast-path.ts";
import {
  subscriptionCacheRoutes,
  subscriptionsRoutes,
} from "./features/subscriptions/subscriptions.routes.ts";
import { syncRoutes } from "./features/sync/sync.routes.ts";
import { templatesRoutes } from "./features/templates/templates.routes.ts";
import { trafficRoutes } from "./features/traffic/traffic.routes.ts";
import { usersRoutes } from "./features/users/users.routes.ts";
import { allowedMethods } from "./lib/allowed-methods.ts";
import { AppError, ForbiddenError, NotFoundError } from "./lib/errors.ts";
import { type App, ownerScope } from "./lib/http.ts";
import { guardInput } from "./lib/input-guard.ts";
import { answerClientError, sendProblem } from "./lib/problem.ts";
import { requestIdFrom } from "./lib/request-id.ts";
import { can } from "./lib/roles.ts";
import { Problem } from "./lib/schemas.ts";
import { applySecurityHeaders, htmlPolicyFor } from "./lib/security-headers.ts";
import { buildSerializer, validatorCompiler } from "./lib/validation.ts";
import { packageVersion } from "./lib/version.ts";
import { readsItsWrites } from "./reactions/reactions.ts";

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export type RouteInfo = { method: string; url: string; isPublic: boolean };

export type BuildOptions = {
  /** The Swagger UI at /api/docs (default on). Test apps leave it out: it reads and hashes its static
   * files at start, which nothing but the docs tests needs. /api/openapi.json is always served. */
  docsUi?: boolean;
  /** Fastify's limit for a plugin to start (default 10 s); test apps on a loaded machine lift it, the
   * test runner's per-file deadline bounds them instead. */
  pluginTimeoutMs?: number;
};

export async function buildApp(
  deps: Deps,
  options: BuildOptions = {},
): Promise<App & { routeTable: RouteInfo[] }> {
  const app = Fastify({
    ...(options.pluginTimeoutMs === undefined ? {} : { pluginTimeout: options.pluginTimeoutMs }),
    schemaController: { compilersFactory: { buildSerializer } },
    loggerInstance: deps.logger as FastifyBaseLogger,
    // A client's X-Request-Id is kept only when short and plain (lib/request-id.ts).
    requestIdHeader: false,
    genReqId: (request) => requestIdFrom(request.headers["x-request-id"]),
    // Fastify also takes a hop count here; its types list only the other forms.
    trustProxy: deps.config.trustProxy as boolean | string[],
    bodyLimit: 1024 * 1024,
    // maxParamLength: Marzban subscription tokens (JWTs of about 250 characters) are path parameters.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // Errors raised before a route is chosen (bad percent-escape, over-long parameter) and before
    // Fastify sees the request at all (unparsable HTTP) are problem+json too.
    // On the public subscription paths (ours and the imported peers' /sub/…, /json/…) a bad escape
    // is a key that names nobody: 404 like any unknown or malformed key (issue 51), 400 elsewhere.
    frameworkErrors: (error, request, reply) => {
      const publicKey = error.code === "FST_ERR_BAD_URL" && /^\/(sub|json)\//.test(request.url);
      sendProblem(publicKey ? new NotFoundError("subscription") : error, request, reply);
    },
    clientErrorHandler: answerClientError,
    // Cached subscriptions are answered before Fastify's routing (features/subscriptions/fast-path.ts).
    serverFactory: (handler, options) => {
      const requestTimeout = deps.config.requestTimeoutMs;
      const server = createServer(
        {
          // A client gets PORTCULLIS_REQUEST_TIMEOUT_MS to send a whole request (Fastify's default is
          // no limit: a body sent a byte a minute would hold its connection for ever); Node gives the
          // head that or 60 s, whichever is less, and checks both every quarter of the limit.
          requestTimeout,
          connectionsCheckingInterval: Math.min(30_000, Math.ceil(requestTimeout / 4)),
        },
        withCacheFastPath(deps.services.subscriptions, handler),
      );
      // What Fastify sets on the server it makes itself (its defaults: 72 s, none).
      const timeouts = options as { keepAliveTimeout?: number; connectionTimeout?: number };
      server.keepAliveTimeout = timeouts.keepAliveTimeout ?? 72_000;
      server.setTimeout(timeouts.connectionTimeout ?? 0);
      return server;
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler());
  // Every body is JSON: text/plain would reach the schemas as a string; 415 says what is expected.
  app.removeContentTypeParser("text/plain");
  app.addSchema(Problem);

  const routeTable: RouteInfo[] = [];
  app.addHook("onRoute", (route) => {
    if (route.url.startsWith("/api/docs")) route.config = { ...route.config, auth: false };
    const isPublic = route.config?.auth === false;
    // Every protected route needs a permission in features/admins/permissions.ts: registering one
    // without fails at start, so a new route cannot be open to every role by omission.
    if (!isPublic) {
      const methods = [route.method].flat();
      const needed = methods.map((method) => routePermission(method, route.url));
      const permission = needed[0];
      if (permission === undefined || needed.some((p) => p !== permission)) {
        throw new Error(
          `${methods.join(",")} ${route.url} has no permission in features/admins/permissions.ts`,
        );
      }
      // How the route reaches users, for admins whose scope is own (also refuses a missing entry).
      const userReach = routeUserReach(methods[0] as string, route.url, permission);
      route.config = { ...route.config, permission, ...(userReach === undefined ? {} : { userReach }) };
    }
    // The OpenAPI document says which operations need no token.
    if (isPublic && route.schema !== undefined && route.schema.security === undefined) {
      route.schema = { ...route.schema, security: [] };
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) routeTable.push({ method, url: route.url, isPublic });
    // Read-your-writes, for the writes the reactions table names (src/reactions/reactions.ts): the
    // answer leaves only after this instance's subscription cache caught up with the write.
    if (methods.some((method) => !READ_METHODS.has(method)) && readsItsWrites(route.url)) {
      const own = route.onSend === undefined ? [] : [route.onSend].flat();
      route.onSend = [
        ...own,
        async (_request, _reply, payload) => {
          await deps.services.subscriptions.catchUp();
          return payload;
        },
      ];
    }
  });

  app.decorateRequest("principal", undefined);
  app.decorateRequest("auditId", undefined);
  app.decorateRequest("auditNotes", undefined);
  // Authentication is decided by the route the router matched (after it decoded %-escapes and took
  // the path out of an absolute-form target), never by the raw URL: every route needs a token
  // unless it was registered with `config: { auth: false }`; an unmatched request is a 404.
  // A callback, not an async function: public routes (GET /sub is the hottest) pay no promise for it.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    applySecurityHeaders(reply);
    if (request.is404 || request.routeOptions.config.auth === false) return done();
    authorize(request).then(() => done(), done);
  });
  /** Authenticates, records a write in the audit log before anything runs, then checks the role. */
  async function authorize(request: FastifyRequest): Promise<void> {
    const principal = await deps.services.auth.authenticate(request.headers.authorization);
    request.principal = principal;
    if (isAudited(request)) await beginAudit(deps.services.audit, request, principal);
    const permission = request.routeOptions.config.permission;
    if (permission === undefined || !can(principal.role, permission)) {
      throw new ForbiddenError(`the ${principal.role} role may not do this (${permission})`);
    }
    if (request.routeOptions.config.userReach?.kind === "fleet" && principal.ownScope.length > 0) {
      throw new ForbiddenError(
        "this reaches every admin's users: it needs every permission with scope all",
        "scope_all_required",
      );
    }
  }
  // A route naming one user in its path, for an admin who holds its permission for own users only:
  // another admin's user is the same 404 as an unknown id (docs/RESELLERS.md). After validation, so
  // the id is a well-formed uuid.
  app.addHook("preHandler", (request, _reply, done) => {
    const reach = request.routeOptions.config.userReach;
    const permission = request.routeOptions.config.permission;
    if (reach?.kind !== "user" || request.principal === undefined || permission === undefined) return done();
    const owner = ownerScope(request.principal, permission);
    if (owner === undefined) return done();
    const userId = String((request.params as Record<string, unknown>)[reach.param]);
    deps.services.users
      .ownerOf(userId)
      .then((found) => done(found === owner ? undefined : new NotFoundError("user", userId)), done);
  });
  // NUL characters, unpaired surrogates and deep nesting are refused before any schema sees them.
  app.addHook("preValidation", (request, _reply, done) => {
    // No route, or a route that answers any malformed id itself (/sub: 404): nothing to refuse here.
    if (request.is404 || request.routeOptions.config.guardInput === false) return done();
    try {
      guardInput({ body: request.body, querystring: request.query, params: request.params });
      done();
    } catch (error) {
      done(error as Error);
    }
  });
  app.addHook("onSend", (request, reply, payload, done) => {
    const policy = htmlPolicyFor(reply.getHeader("content-type"), reply.getHeader("content-security-policy"));
    if (policy !== undefined) reply.header("content-security-policy", policy);
    if (request.auditId === undefined) return done(null, payload);
    finishAudit(deps.services.audit, request, reply, payload).then(
      () => done(null, payload),
      (error: unknown) => {
        request.log.error({ err: error }, "audit entry not completed");
        done(null, payload);
      },
    );
  });

  app.addHook("onResponse", (request, reply, done) => {
    const route = request.is404 ? "unmatched" : (request.routeOptions.url ?? "unmatched");
    deps.services.metrics.recordRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler((error, request, reply) => sendProblem(error, request, reply));
  app.setNotFoundHandler((request, reply) => {
    const routeMethods = new Set(routeTable.map((route) => route.method));
    const allow = allowedMethods((route) => app.findRoute(route), routeMethods, request.url);
    if (allow.length === 0) {
      return sendProblem(new AppError("route_not_found", "no such route"), request, reply);
    }
    reply.header("allow", allow.join(", "));
    const detail = `${request.method} is not allowed here; allowed: ${allow.join(", ")}`;
    return sendProblem(new AppError("method_not_allowed", detail), request, reply);
  });

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Portcullis API",
        version: packageVersion,
        description: "Admin API for Xray / V2Ray proxy fleets",
      },
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer" },
          metricsToken: { type: "http", scheme: "bearer", description: "PORTCULLIS_METRICS_TOKEN" },
        },
      },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  if (options.docsUi !== false) await app.register(swaggerUi, { routePrefix: "/api/docs" });
  app.get("/api/openapi.json", { config: { auth: false }, schema: { hide: true } }, async () =>
    app.swagger(),
  );

  healthRoutes(app, deps.database);
  authRoutes(app, deps.services.auth, deps.services.ownCredentials);
  adminsRoutes(app, deps.services.admins);
  auditRoutes(app, deps.services.audit);
  webhooksRoutes(app, deps.services.webhooks);
  usersRoutes(app, deps.services.users, {
    lists: deps.services.userLists,
    bulk: deps.services.userBulkActions,
    enrol: deps.services.enrolment,
    groups: deps.services.groups,
    plans: deps.services.plans,
  });
  groupsRoutes(app, deps.services.groups);
  plansRoutes(app, deps.services.plans);
  certificatesRoutes(app, deps.services.certificates);
  templatesRoutes(app, deps.services.templates);
  serversRoutes(app, deps.services.servers);
  nodesRoutes(app, deps.services.nodes);
  overviewRoutes(app, deps.services.overview);
  fairUseRoutes(app, deps.services.fairUse);
  devicesRoutes(app, deps.services.devices);
  inboundsRoutes(app, deps.services.inbounds);
  hostsRoutes(app, deps.services.hosts);
  accessRoutes(app, deps.services.access, deps.services.bulkGrants);
  syncRoutes(app, deps.services.reconciler);
  trafficRoutes(app, deps.services.traffic, deps.services.usage);
  importRoutes(app, deps.services.importJobs);
  // public: /sub/* has config auth: false; keys not ours may be another panel's (features/import)
  const legacy = deps.services.legacySubscriptions;
  subscriptionsRoutes(app, deps.services.subscriptions, async (key) => (await legacy.resolve(key))?.subToken);
  legacySubscriptionRoutes(app, legacy, deps.services.subscriptions);
  subscriptionCacheRoutes(app, deps.services.subscriptions);
  subscriptionSettingsRoutes(app, deps.services.subscriptionSettings);
  if (deps.config.metricsToken !== undefined) {
    metricsRoutes(app, deps.services.metrics, deps.config.metricsToken);
  }
  dashboardRoutes(app, deps.config.dashboard); // public: static files of the web dashboard

  return Object.assign(app, { routeTable });
}
