// GET/PUT /api/subscription-settings (settings.read / settings.write).
import type { App } from "../../lib/http.ts";
import { problems } from "../../lib/schemas.ts";
import { SubscriptionSettings, SubscriptionSettingsUpdate } from "./subscription-settings.schemas.ts";
import type { SubscriptionSettingsService } from "./subscription-settings.service.ts";

export function subscriptionSettingsRoutes(app: App, settings: SubscriptionSettingsService): void {
  const tags = ["subscription"];
  app.get(
    "/api/subscription-settings",
    {
      schema: {
        tags,
        summary: "How /sub chooses and writes formats, its headers and page (defaults filled in)",
        response: { 200: SubscriptionSettings, ...problems() },
      },
    },
    () => settings.get(),
  );
  app.put(
    "/api/subscription-settings",
    {
      schema: {
        tags,
        summary: "Change the fields given; base documents and rules are validated (422 with the JSON path)",
        body: SubscriptionSettingsUpdate,
        response: { 200: SubscriptionSettings, ...problems(422) },
      },
    },
    (request) => settings.update(request.body),
  );
}
