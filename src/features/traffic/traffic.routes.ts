// GET /api/users/{id}/usage: the traffic collected for a user, in total and per server, or with
// from, to and granularity its history in buckets; GET /api/usage: every server's history.
import { type App, ownerScope, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { FleetUsage, FleetUsageQuery, UserUsageAnswer, UserUsageQuery } from "./traffic.schemas.ts";
import type { TrafficService } from "./traffic.service.ts";
import type { UsageService } from "./usage.service.ts";
import { seriesQuery } from "./usage.ts";

export function trafficRoutes(app: App, traffic: TrafficService, usage: UsageService): void {
  app.get(
    "/api/users/:id/usage",
    {
      schema: {
        tags: ["users"],
        summary:
          "Traffic collected for this user: totals per server, or with from, to and granularity its history",
        params: IdParams,
        querystring: UserUsageQuery,
        response: { 200: UserUsageAnswer, ...problems(404) },
      },
    },
    async (request) => {
      const series = seriesQuery(request.query);
      const { id } = request.params;
      return series === undefined ? traffic.usage(id) : usage.userSeries(id, series);
    },
  );

  app.get(
    "/api/usage",
    {
      schema: {
        tags: ["servers"],
        summary: "Traffic history of every server (or one): buckets of the users' bytes per server",
        description:
          "For an admin whose users.read scope is own: only their own users' bytes (docs/RESELLERS.md)",
        querystring: FleetUsageQuery,
        response: { 200: FleetUsage, ...problems(404) },
      },
    },
    async (request) => usage.fleet(request.query, ownerScope(principalOf(request), "users.read")),
  );
}
