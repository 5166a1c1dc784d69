// buildApp(deps): the Fastify application with every route, the bearer-token hook and the
// problem+json error mapping. It never listens; main.ts does, tests use inject().
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import type { Deps } from "./deps.ts";
import { accessRoutes } from "./features/access/access.routes.ts";
import { authRoutes } from "./features/auth/auth.routes.ts";
import { certificatesRoutes } from "./features/certificates/certificates.routes.ts";
import { dashboardRoutes } from "./features/dashboard/dashboard.routes.ts";
import { healthRoutes } from "./features/health/health.routes.ts";
import { inboundsRoutes } from "./features/inbounds/inbounds.routes.ts";
import { serversRoutes } from "./features/servers/servers.routes.ts";
import { withCacheFastPath } from "./features/subscriptions/fast-path.ts";
import {
  subscriptionCacheRoutes,
  subscriptionsRoutes,
} from "./features/subscriptions/subscriptions.routes.ts";
import { syncRoutes } from "./features/sync/sync.routes.ts";
import { templatesRoutes } from "./features/templates/templates.routes.ts";
import { trafficRoutes } from "./features/traffic/traffic.routes.ts";
import { usersRoutes } from "./features/users/users.routes.ts";
import { AppError, RateLimitedError } from "./lib/errors.ts";
import type { App } from "./lib/http.ts";
import { Problem } from "./lib/schemas.ts";
import { describeValidationErrors, validatorCompiler } from "./lib/validation.ts";
import { packageVersion } from "./lib/version.ts";

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export type RouteInfo = { method: string; url: string; isPublic: boolean };

export async function buildApp(deps: Deps): Promise<App & { routeTable: RouteInfo[] }> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
    // Cached subscriptions are answered before Fastify's routing (features/subscriptions/fast-path.ts).
    serverFactory: (handler, options) => {
      const server = createServer(withCacheFastPath(deps.services.subscriptions, handler));
      // What Fastify sets on the server it makes itself (its defaults: 72 s, none, none).
      const timeouts = options as {
        keepAliveTimeout?: number;
        requestTimeout?: number;
        connectionTimeout?: number;
      };
      server.keepAliveTimeout = timeouts.keepAliveTimeout ?? 72_000;
      server.requestTimeout = timeouts.requestTimeout ?? 0;
      server.setTimeout(timeouts.connectionTimeout ?? 0);
      return server;
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler());
  app.addSchema(Problem);

  const routeTable: RouteInfo[] = [];
  app.addHook("onRoute", (route) => {
    if (route.url.startsWith("/api/docs")) route.config = { ...route.config, auth: false };
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods)
      routeTable.push({ method, url: route.url, isPublic: route.config?.auth === false });
    // Read-your-writes: a write's response leaves only after cached subscriptions caught up with it.
    if (methods.some((method) => !READ_METHODS.has(method))) {
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
  // A callback, not an async function: public routes (GET /sub is the hottest) pay no promise for it.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    if (!request.url.startsWith("/api/") || request.routeOptions.config.auth === false || request.is404) {
      return done();
    }
    deps.services.auth.authenticate(request.headers.authorization).then((principal) => {
      request.principal = principal;
      done();
    }, done);
  });

  app.setErrorHandler((error, request, reply) => sendProblem(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      new AppError("route_not_found", `no route for ${request.method} ${request.url.split("?")[0]}`, 404),
      request,
      reply,
    ),
  );

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Portcullis API",
        version: packageVersion,
        description: "Admin API for Xray / V2Ray proxy fleets",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: "/api/docs" });
  app.get("/api/openapi.json", { config: { auth: false }, schema: { hide: true } }, async () =>
    app.swagger(),
  );

  healthRoutes(app, deps);
  authRoutes(app, deps.services.auth);
  usersRoutes(app, deps.services.users);
  certificatesRoutes(app, deps.services.certificates);
  templatesRoutes(app, deps.services.templates);
  serversRoutes(app, deps.services.servers);
  inboundsRoutes(app, deps.services.inbounds);
  accessRoutes(app, deps.services.access, deps.services.bulkGrants);
  syncRoutes(app, deps.services.reconciler);
  trafficRoutes(app, deps.services.traffic);
  subscriptionsRoutes(app, deps.services.subscriptions); // public: /sub/* has config auth: false
  subscriptionCacheRoutes(app, deps.services.subscriptions);
  dashboardRoutes(app, deps.config.dashboard); // public: static files of the web dashboard

  return Object.assign(app, { routeTable });
}

function sendProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = toProblem(error);
  if (problem.status >= 500) request.log.error({ err: error }, "request failed");
  if (error instanceof RateLimitedError) reply.header("retry-after", String(error.retryAfterSeconds));
  return reply
    .code(problem.status)
    .type("application/problem+json")
    .send({
      type: "about:blank",
      title: titleOf(problem.status),
      instance: request.url.split("?")[0],
      ...problem,
    });
}

type ProblemBody = {
  status: number;
  code: string;
  detail: string;
  errors?: { path: string; message: string }[];
};

function toProblem(error: unknown): ProblemBody {
  if (error instanceof AppError) {
    return {
      status: error.status,
      code: error.code,
      detail: error.message,
      ...(error.details ? { errors: error.details } : {}),
    };
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) {
    const errors = describeValidationErrors(
      fastifyError.validation as never,
      fastifyError.validationContext ?? "request",
    );
    const detail = errors.map((e) => `${e.path} ${e.message}`).join("; ");
    return { status: 400, code: "validation_failed", detail, errors };
  }
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return { status, code: fastifyCode(fastifyError.code), detail: fastifyError.message ?? "bad request" };
  }
  return {
    status: 500,
    code: "internal_error",
    detail: "internal error; see the server log for this request id",
  };
}

const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "malformed_json",
  FST_ERR_CTP_EMPTY_JSON_BODY: "malformed_json",
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "bad_request",
};

function fastifyCode(code: string | undefined): string {
  return (code && FASTIFY_CODES[code]) ?? "bad_request";
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

function titleOf(status: number): string {
  return TITLES[status] ?? "Error";
}
