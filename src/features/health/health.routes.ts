// GET /health: public liveness record. The seed's fields (status, service, version) stay as they
// were; `dependencies` says which one is down. 503 with Retry-After when the database does not
// answer within PING_TIMEOUT_MS: the record stays the seed's JSON (its `status` is a word, where a
// problem's is a number), so probes that read `status` keep working. /sub answers what it has in
// memory meanwhile (docs/SECURITY.md, "A database outage").
import { Type } from "typebox";
import { type DatabaseHandle, pingDatabase } from "../../db/connection.ts";
import type { App } from "../../lib/http.ts";
import { packageVersion } from "../../lib/version.ts";

const PING_TIMEOUT_MS = 3000;
const RETRY_AFTER_S = "5";

const Dependency = Type.Union([Type.Literal("up"), Type.Literal("down")]);
const Health = Type.Object({
  status: Type.String({ description: "ok | unavailable" }),
  service: Type.String(),
  version: Type.String(),
  dependencies: Type.Object(
    { database: Dependency },
    { description: "each dependency's state; unavailable when one is down" },
  ),
});

/** Resolves when the database answered, rejects when it failed or said nothing within the deadline. */
async function ping(database: DatabaseHandle): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
  });
  try {
    await Promise.race([pingDatabase(database), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(app: App, database: DatabaseHandle): void {
  app.get(
    "/health",
    { config: { auth: false }, schema: { tags: ["health"], response: { 200: Health, 503: Health } } },
    async (request, reply) => {
      const record = { service: "portcullis", version: packageVersion };
      try {
        await ping(database);
        return { status: "ok", ...record, dependencies: { database: "up" as const } };
      } catch (error) {
        request.log.warn(
          { cause: String((error as Error)?.message ?? error) },
          "health check: database unreachable",
        );
        return reply
          .code(503)
          .header("retry-after", RETRY_AFTER_S)
          .send({ status: "unavailable", ...record, dependencies: { database: "down" as const } });
      }
    },
  );
}
