// GET /api/overview: what the dashboard's home page shows (overview.service.ts).
import { type App, ownerScope, principalOf } from "../../lib/http.ts";
import { Overview } from "./overview.schemas.ts";
import type { OverviewService } from "./overview.service.ts";

export function overviewRoutes(app: App, overview: OverviewService): void {
  app.get(
    "/api/overview",
    {
      schema: {
        tags: ["servers"],
        summary:
          "The fleet at a glance: servers with their agents' reports, users per status, online now (agents asked in parallel, 3 s each at most)",
        description:
          "For an admin whose users.read scope is own: the users per status and online now count their own users only (docs/RESELLERS.md)",
        response: { 200: Overview },
      },
    },
    async (request) => overview.get(ownerScope(principalOf(request), "users.read")),
  );
}
