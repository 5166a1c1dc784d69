// Node enrollment: an admin makes a join string; the agent spends it at /api/node-join (no session:
// the one-time token is the credential) and gets its certificate; the agent's report is read through
// the same mutual-TLS link the core calls use.
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import {
  AgentStatus,
  BaseDocument,
  BaseDocumentUpdate,
  CoreLog,
  Enrollment,
  Joined,
  JoinRequest,
  ServerOnline,
  UserOnline,
} from "./nodes.schemas.ts";
import type { NodesService } from "./nodes.service.ts";

export function nodesRoutes(app: App, nodes: NodesService): void {
  const tags = ["nodes"];

  app.post(
    "/api/servers/:id/node-enrollment",
    {
      schema: {
        tags,
        summary:
          "A one-time join string (1 hour) for the server's node agent; earlier unused ones stop working",
        params: IdParams,
        response: { 201: Enrollment, ...problems(404, 409) },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await nodes.createEnrollment(request.params.id, `${request.protocol}://${request.host}`)),
  );

  app.post(
    "/api/node-join",
    {
      config: { auth: false },
      schema: {
        tags,
        summary: "The agent's join: spends the token, signs the agent's key, returns the panel CA",
        body: JoinRequest,
        response: { 200: Joined, ...problems(400, 401) },
      },
    },
    async (request) => nodes.join(request.body.token, request.body.csr),
  );

  app.get(
    "/api/servers/:id/node",
    {
      schema: {
        tags,
        summary:
          "The node agent's report: its version and uptime, the core's flavor, version, uptime, restarts",
        params: IdParams,
        response: { 200: AgentStatus, ...problems(404, 409, 502, 504) },
      },
    },
    async (request) => nodes.agentStatus(request.params.id) as never,
  );

  app.get(
    "/api/servers/:id/node-log",
    {
      schema: {
        tags,
        summary:
          "The node's core: its last 200 log lines (credentials masked), read from the agent on each call",
        params: IdParams,
        response: { 200: CoreLog, ...problems(404, 409, 502, 504) },
      },
    },
    async (request) => nodes.coreLog(request.params.id),
  );

  app.get(
    "/api/servers/:id/node-base",
    {
      schema: {
        tags,
        summary: "The base document the node agent writes its core's config from",
        params: IdParams,
        response: { 200: BaseDocument, ...problems(404) },
      },
    },
    async (request) => nodes.baseDocument(request.params.id),
  );

  app.put(
    "/api/servers/:id/node-base",
    {
      schema: {
        tags,
        summary:
          "Replace the base document (null: the default); the agent restarts its core with it on the next call",
        params: IdParams,
        body: BaseDocumentUpdate,
        response: { 200: BaseDocument, ...problems(400, 404) },
      },
    },
    async (request) => nodes.setBaseDocument(request.params.id, request.body.document),
  );

  app.get(
    "/api/servers/:id/online",
    {
      schema: {
        tags,
        summary: "Per user, the source addresses the server's node agent saw in the last 5 minutes",
        params: IdParams,
        response: { 200: ServerOnline, ...problems(404, 409, 502, 504) },
      },
    },
    async (request) => nodes.serverOnline(request.params.id),
  );

  app.get(
    "/api/users/:id/online",
    {
      schema: {
        tags,
        summary: "The user's source addresses seen in the last 5 minutes on every node server they use",
        params: IdParams,
        response: { 200: UserOnline, ...problems(404) },
      },
    },
    async (request) => nodes.userOnline(request.params.id),
  );
}
