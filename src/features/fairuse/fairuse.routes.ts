// GET/PUT /api/fair-use/settings (settings.read / settings.write), GET /api/users/{id}/fair-use (users.read).

import { NotFoundError } from "../../lib/errors.ts";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { FairUseSettings, FairUseSettingsUpdate, UserFairUse } from "./fairuse.schemas.ts";
import type { FairUseService } from "./fairuse.service.ts";

export function fairUseRoutes(app: App, fairUse: FairUseService): void {
  const tags = ["fair use"];
  app.get(
    "/api/fair-use/settings",
    {
      schema: {
        tags,
        summary:
          "IP limits: the default limit, the window, the /24 tolerance, the allow-list and the block periods",
        response: { 200: FairUseSettings, ...problems() },
      },
    },
    () => fairUse.settings(),
  );
  app.put(
    "/api/fair-use/settings",
    {
      schema: {
        tags,
        summary:
          "Change the fields given; every allow-list entry must be an address or a CIDR (422 with its path)",
        body: FairUseSettingsUpdate,
        response: { 200: FairUseSettings, ...problems(422) },
      },
    },
    (request) => fairUse.updateSettings(request.body),
  );
  app.get(
    "/api/users/:id/fair-use",
    {
      schema: {
        tags,
        summary:
          "The user's IP limit, block, the addresses seen in the window (where, when) and the block history",
        params: IdParams,
        response: { 200: UserFairUse, ...problems(404) },
      },
    },
    async (request) => {
      const view = await fairUse.userFairUse(request.params.id);
      if (view === undefined) throw new NotFoundError("user", request.params.id);
      return view;
    },
  );
}
