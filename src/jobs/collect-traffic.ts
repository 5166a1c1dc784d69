// Reads traffic counters (with reset) from the cores of the servers this instance holds, a few
// servers at a time, each waited for up to the core deadline (a later answer is journaled by the next
// run, whoever holds the server by then), journals them in one write
// (TrafficService.collectAll: durable from then on), then asks for a fold (jobs/fold-traffic.ts: in
// a loop of its own, so a long fold never delays the next poll; it folds whatever earlier runs or a
// crashed instance left too, then runs the lifecycle tick if the totals moved). An unreachable core is
// skipped quietly: the reconcile job reports it.
import type { Logger } from "pino";
import type { ServerLeases } from "../features/sync/leases.ts";
import type { TrafficService } from "../features/traffic/traffic.service.ts";
import { AppError } from "../lib/errors.ts";
import { limiter } from "../lib/limiter.ts";
import { type TrafficFolder, trafficFolder } from "./fold-traffic.ts";
import type { Job } from "./runner.ts";

export type CollectTrafficOptions = {
  traffic: TrafficService;
  leases: ServerLeases;
  logger: Logger;
  intervalMs: number;
  concurrency: number;
  /** Run after each fold that moved the totals (the lifecycle tick, so limits trail the cores by one fold). */
  afterFold?: () => Promise<unknown>;
};

export function collectTrafficJob(options: CollectTrafficOptions): Job & { folder: TrafficFolder } {
  const { traffic, leases, logger } = options;
  const limit = limiter(options.concurrency);
  const folder = trafficFolder({ traffic, logger, afterFold: options.afterFold });
  return {
    name: "collect-traffic",
    intervalMs: options.intervalMs,
    folder,
    drain: () => folder.drain(),
    async run({ signal }) {
      const ids = await traffic.listServerIds();
      const held = ids.filter((id) => leases.holds(id));
      const collecting = traffic.collectAll(held, limit, (id) => !signal.aborted && leases.holds(id));
      leases.track(held, collecting); // a server handed over meanwhile goes on only once this ends
      const results = await collecting;
      results.forEach((result, index) => {
        if (result.status === "fulfilled") return;
        const error = result.reason;
        const level = error instanceof AppError && error.status >= 500 ? "debug" : "warn";
        logger[level](
          { job: "collect-traffic", server_id: held[index], err: error },
          "traffic not collected",
        );
      });
      // An agent's batches go straight into the totals: the lifecycle tick is due even if nothing is folded.
      const isCounted = results.some((result) => result.status === "fulfilled" && result.value.users > 0);
      if (!signal.aborted) folder.request(isCounted);
    },
  };
}
