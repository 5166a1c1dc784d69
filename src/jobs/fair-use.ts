// The fair-use job: every traffic interval one tick of features/fairuse (docs/FAIR-USE.md): the
// agents' online addresses in, warnings, blocks and releases out.
import type { Logger } from "pino";
import type { FairUseService } from "../features/fairuse/fairuse.service.ts";
import type { Job } from "./runner.ts";

export function fairUseJob(fairUse: FairUseService, logger: Logger, intervalMs: number): Job {
  return {
    name: "fair-use",
    intervalMs,
    async run() {
      const result = await fairUse.tick();
      if (result.unreachable.length > 0) {
        logger.debug({ job: "fair-use", unreachable: result.unreachable }, "agents not asked this tick");
      }
    },
  };
}
