// POST /api/servers/{id}/sync: re-sync one server's core with the database now.
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import type { Reconciler } from "./reconciler.ts";
import { ReconcileSummary, SyncRequested } from "./sync.schemas.ts";

export function syncRoutes(app: App, reconciler: Reconciler): void {
  app.post(
    "/api/servers/:id/sync",
    {
      schema: {
        tags: ["servers"],
        summary:
          "Full reconcile now (Xray: list and diff; V2Ray: re-apply everything); 202 when another instance holds the server",
        params: IdParams,
        response: { 200: ReconcileSummary, 202: SyncRequested, ...problems(404, 502, 504) },
      },
    },
    async (request, reply) => {
      const summary = await reconciler.syncNow(request.params.id);
      if (summary !== undefined) return summary;
      const detail = "another instance holds this server; it runs the full sync on its next tick";
      return reply.code(202).send({ status: "requested", detail });
    },
  );
}
