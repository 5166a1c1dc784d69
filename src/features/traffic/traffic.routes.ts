// GET /api/users/{id}/usage: the traffic collected for a user, in total and per server.
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { UserUsage } from "./traffic.schemas.ts";
import type { TrafficService } from "./traffic.service.ts";

export function trafficRoutes(app: App, traffic: TrafficService): void {
  app.get(
    "/api/users/:id/usage",
    {
      schema: {
        tags: ["users"],
        summary: "Traffic collected from the cores for this user: totals and per server",
        params: IdParams,
        response: { 200: UserUsage, ...problems(404) },
      },
    },
    async (request) => traffic.usage(request.params.id),
  );
}
