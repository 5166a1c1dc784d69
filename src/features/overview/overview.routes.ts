// GET /api/overview: what the dashboard's home page shows (overview.service.ts).
import type { App } from "../../lib/http.ts";
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
        response: { 200: Overview },
      },
    },
    async () => overview.get(),
  );
}
