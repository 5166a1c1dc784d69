// GET /api/audit (owners): the audit log, newest first, filtered by actor, action, target, outcome, time.
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { AuditPage, AuditQuery } from "./audit.schemas.ts";
import type { AuditService } from "./audit.service.ts";

export function auditRoutes(app: App, audit: AuditService): void {
  app.get(
    "/api/audit",
    {
      schema: {
        tags: ["audit"],
        summary: "The audit log: every state-changing call, its actor and outcome",
        querystring: AuditQuery,
        response: { 200: AuditPage, ...problems(403) },
      },
    },
    async (request) => {
      const { page, per_page, actor_id, action, target, outcome, from, to } = request.query;
      return audit.list({ actorId: actor_id, action, target, outcome, from, to }, page, per_page);
    },
  );
}
