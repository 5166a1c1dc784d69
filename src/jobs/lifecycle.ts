// The lifecycle job: every interval one tick of the user lifecycle (features/users/lifecycle.service.ts):
// on-hold timeouts, period resets, expiry and data limits, usage and expiry notices. The traffic job
// runs one more tick after each collection, so a limit bites within one traffic interval. Every
// instance may run it: each statement changes only rows still matching, so a user moves once.
import type { Logger } from "pino";
import type { LifecycleService } from "../features/users/lifecycle.service.ts";
import type { Job } from "./runner.ts";

export function lifecycleJob(lifecycle: LifecycleService, logger: Logger, intervalMs: number): Job {
  return {
    name: "lifecycle",
    intervalMs,
    async run() {
      const result = await lifecycle.tick();
      const moved = result.activated.length + result.limited.length + result.expired.length;
      if (moved + result.resets > 0) {
        logger.info(
          {
            job: "lifecycle",
            activated: result.activated.length,
            limited: result.limited.length,
            expired: result.expired.length,
            resets: result.resets,
          },
          "user statuses moved",
        );
      }
    },
  };
}
