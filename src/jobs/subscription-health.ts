// Health in subscriptions (issue 47): servers offline for longer than the subscription setting's
// offline_minutes leave /sub, so clients stop trying dead nodes. The database knows since when a
// server is offline (migration 0024's trigger) and clears the flag the moment it is back; this job
// only sets it once the minutes have passed (and clears it when the setting is turned off or its
// minutes raised). Each change reaches the subscription cache through the change feed.
import type { Logger } from "pino";
import type { ServersService } from "../features/servers/servers.service.ts";
import type { SubscriptionSettingsService } from "../features/subscription-settings/subscription-settings.service.ts";
import type { Job } from "./runner.ts";

/** A server leaves /sub at most this long after its minutes have passed. */
export const SUBSCRIPTION_HEALTH_INTERVAL_MS = 15_000;

export function subscriptionHealthJob(
  servers: ServersService,
  settings: SubscriptionSettingsService,
  logger: Logger,
  intervalMs = SUBSCRIPTION_HEALTH_INTERVAL_MS,
  now: () => Date = () => new Date(),
): Job {
  return {
    name: "subscription-health",
    intervalMs,
    async run() {
      const { leave_out_offline_servers: enabled, offline_minutes: minutes } = await settings.get();
      const counts = await servers.applySubscriptionHealth(enabled, minutes, now());
      if (counts.leftOut + counts.back > 0)
        logger.info({ job: "subscription-health", ...counts }, "servers left out of or back in /sub");
    },
  };
}
