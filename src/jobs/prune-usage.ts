// Usage-history retention: hourly buckets older than 7 days and daily buckets older than 13 months
// go (features/traffic/usage.ts says which). Every PORTCULLIS_USAGE_PRUNE_INTERVAL_MS; cheap.
import type { Logger } from "pino";
import type { UsageService } from "../features/traffic/usage.service.ts";
import type { Job } from "./runner.ts";

export function pruneUsageJob(usage: UsageService, logger: Logger, intervalMs: number): Job {
  return {
    name: "prune-usage",
    intervalMs,
    async run() {
      const counts = await usage.prune();
      if (counts.hourly + counts.daily > 0)
        logger.info({ job: "prune-usage", ...counts }, "usage history pruned");
    },
  };
}
