// GET /health: public liveness record; 503 when the database does not answer.
import { Type } from "typebox";
import { type DatabaseHandle, pingDatabase } from "../../db/connection.ts";
import type { App } from "../../lib/http.ts";
import { packageVersion } from "../../lib/version.ts";

const Health = Type.Object({ status: Type.String(), service: Type.String(), version: Type.String() });

export function healthRoutes(app: App, database: DatabaseHandle): void {
  app.get(
    "/health",
    { config: { auth: false }, schema: { tags: ["health"], response: { 200: Health, 503: Health } } },
    async (request, reply) => {
      try {
        await pingDatabase(database);
        return { status: "ok", service: "portcullis", version: packageVersion };
      } catch (error) {
        request.log.warn({ err: error }, "health check: database unreachable");
        return reply
          .code(503)
          .send({ status: "unavailable", service: "portcullis", version: packageVersion });
      }
    },
  );
}
