// GET /metrics: Prometheus text format, only when PORTCULLIS_METRICS_TOKEN is set, and only for a
// scraper that sends it as a bearer token (its own secret, not an admin's).
import { createHash, timingSafeEqual } from "node:crypto";
import { Type } from "typebox";
import { UnauthorizedError } from "../../lib/errors.ts";
import type { App } from "../../lib/http.ts";
import type { MetricsService } from "./metrics.service.ts";

export function metricsRoutes(app: App, metrics: MetricsService, token: string): void {
  const expected = digest(`Bearer ${token}`);
  app.get(
    "/metrics",
    {
      config: { auth: false },
      schema: {
        tags: ["metrics"],
        summary: "Prometheus metrics (needs PORTCULLIS_METRICS_TOKEN as a bearer token)",
        security: [{ metricsToken: [] }],
        produces: ["text/plain"],
        response: { 200: Type.String(), 401: Type.Unsafe<unknown>({ $ref: "Problem#" }) },
      },
    },
    async (request, reply) => {
      const given = digest(request.headers.authorization ?? "");
      if (!timingSafeEqual(given, expected)) {
        throw new UnauthorizedError("send the metrics token as a bearer token", "invalid_metrics_token");
      }
      const { contentType, body } = await metrics.render();
      return reply.type(contentType).send(body);
    },
  );
}

/** Equal-length digests, so the comparison takes the same time whatever was sent. */
function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
