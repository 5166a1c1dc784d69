// The convergence loop: every interval, take (or renew) the leases of the servers this instance may
// reconcile, and start one tick per such server (features/sync/reconciler.ts) unless that server's
// previous tick still runs: a slow or silent core delays only itself. At most `concurrency` ticks
// run at once; a tick is cancelled on shutdown or when its lease is lost (or handed to another
// instance, which may start only once the tick has ended).
import type { Logger } from "pino";
import type { ServersService } from "../features/servers/servers.service.ts";
import type { ServerLeases } from "../features/sync/leases.ts";
import type { Reconciler } from "../features/sync/reconciler.ts";
import { limiter } from "../lib/limiter.ts";
import type { Job } from "./runner.ts";

export type ReconcileJobOptions = {
  reconciler: Reconciler;
  servers: ServersService;
  leases: ServerLeases;
  logger: Logger;
  intervalMs: number;
  concurrency: number;
  /** Told of every finished tick (metrics). */
  onTick?: (serverId: string, ok: boolean) => void;
};

export type ReconcileJob = Job & {
  /** Ticks started and not finished yet (for tests: nothing piles up behind a silent core). */
  readonly inFlight: number;
  /** Ticks finished since the start, whatever their outcome. */
  readonly finished: number;
  /**
   * A tick now for every held server (a user's status changed: their grants wait as 'pending'); a
   * server whose tick runs gets another one right after it.
   */
  wake(): void;
};

export function reconcileJob(options: ReconcileJobOptions): ReconcileJob {
  const { reconciler, servers, leases, logger } = options;
  const running = new Map<string, Promise<void>>();
  /** Servers woken while their tick ran: one more tick when it ends. */
  const again = new Set<string>();
  let shutdownSignal: AbortSignal | undefined;
  let finished = 0;
  const limit = limiter(options.concurrency);

  const start = (serverId: string, shutdown: AbortSignal) => {
    const signal = AbortSignal.any([shutdown, leases.signalFor(serverId)]);
    let ok = true;
    const tick = limit(async () => {
      if (!signal.aborted) await reconciler.tick(serverId, signal);
    })
      .catch((error: unknown) => {
        ok = false;
        if (!signal.aborted)
          logger.error({ job: "reconcile", server_id: serverId, err: error }, "tick failed");
      })
      .finally(() => {
        running.delete(serverId);
        finished += 1;
        options.onTick?.(serverId, ok);
        if (again.delete(serverId) && !shutdown.aborted && leases.holds(serverId)) start(serverId, shutdown);
      });
    running.set(serverId, tick);
    leases.track([serverId], tick);
  };

  const job: ReconcileJob = {
    name: "reconcile",
    intervalMs: options.intervalMs,
    get inFlight() {
      return running.size;
    },
    get finished() {
      return finished;
    },
    wake() {
      const signal = shutdownSignal;
      if (signal === undefined || signal.aborted) return;
      for (const id of running.keys()) again.add(id);
      job.run({ signal }).catch((error: unknown) => {
        if (!signal.aborted) logger.error({ job: "reconcile", err: error }, "woken run failed");
      });
    },
    async run({ signal }) {
      shutdownSignal = signal;
      const ids = (await servers.list()).map((server) => server.id);
      leases.retain(ids);
      const held = await leases.claim(ids);
      for (const id of ids) {
        if (!held.has(id)) reconciler.forget(id);
        else if (!running.has(id) && !signal.aborted) start(id, signal);
      }
    },
    async drain() {
      await Promise.allSettled([...running.values()]);
      await leases.release().catch((error: unknown) => {
        logger.warn({ job: "reconcile", err: error }, "leases not released; they expire on their own");
      });
    },
  };
  reconciler.onWake(() => job.wake());
  return job;
}
