// Runs background jobs: each in its own loop (run, then wait its interval), never two runs of one job
// at once, a failed run logged and retried next interval; stop() aborts the runs and waits for them
// (and for work a job left running in the background, through its drain()).
import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "pino";

export type Job = {
  name: string;
  intervalMs: number;
  run(context: { signal: AbortSignal }): Promise<void>;
  /** For jobs whose work outlives run() (per-server ticks): awaited by stop() after the abort. */
  drain?(): Promise<void>;
};

export type RunningJobs = { stop(): Promise<void> };

export function startJobs(jobs: readonly Job[], logger: Logger): RunningJobs {
  const controller = new AbortController();
  const loops = jobs.map((job) => loop(job, controller.signal, logger));
  return {
    async stop() {
      controller.abort();
      await Promise.all(loops);
      await Promise.all(jobs.map((job) => job.drain?.()));
    },
  };
}

async function loop(job: Job, signal: AbortSignal, logger: Logger): Promise<void> {
  while (!signal.aborted) {
    try {
      await job.run({ signal });
    } catch (error) {
      if (!signal.aborted) logger.error({ job: job.name, err: error }, "job run failed");
    }
    await delay(job.intervalMs, undefined, { signal }).catch(() => undefined);
  }
}
