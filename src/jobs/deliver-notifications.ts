// Sends the notification outbox: every couple of seconds, everything due (features/notifications/
// dispatcher.ts); daily-ish, finished deliveries older than 30 days are pruned.
import type { Logger } from "pino";
import type { Dispatcher } from "../features/notifications/dispatcher.ts";
import type { Job } from "./runner.ts";

const RETENTION_MS = 30 * 86_400_000;
const PRUNE_EVERY_RUNS = 1800;

export function deliverNotificationsJob(dispatcher: Dispatcher, logger: Logger, intervalMs = 2000): Job {
  let runs = 0;
  return {
    name: "deliver-notifications",
    intervalMs,
    async run({ signal }) {
      await dispatcher.deliverDue(signal);
      if (runs++ % PRUNE_EVERY_RUNS === 0) {
        const pruned = await dispatcher.prune(RETENTION_MS);
        if (pruned > 0) logger.info({ job: "deliver-notifications", pruned }, "old deliveries pruned");
      }
    },
  };
}
