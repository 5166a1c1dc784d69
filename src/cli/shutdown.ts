// Graceful shutdown of `serve` (SIGTERM from systemd or Docker, Ctrl-C): stop accepting connections
// and let in-flight requests finish while the background jobs stop and hand their leases over; then
// write what is batched in memory; then close the database. A deadline bounds the wait for requests
// (a hung client must not keep the leases from other instances); past it, open connections are cut
// and the rest still runs, so leases are released and batched writes flushed either way.
import { settlesWithin } from "../lib/settles-within.ts";

export type ShutdownParts = {
  /** Stop listening and wait until in-flight requests are answered (Fastify's close()). */
  closeServer(): Promise<void>;
  /** Cut the connections still open; called once the deadline has passed. */
  cutConnections(): void;
  /** Abort the background jobs, wait for their runs, release this instance's leases. */
  stopJobs(): Promise<void>;
  /** Write what is batched in memory (traffic counted on cores, not written yet). */
  flush(): Promise<void>;
  /** Close the database and the core connections. */
  closeDeps(): Promise<void>;
  log: { info(message: string): void; warn(message: string): void };
  deadlineMs: number;
};

export type ShutdownOutcome = { isWithinDeadline: boolean; durationMs: number };

export async function shutDown(parts: ShutdownParts): Promise<ShutdownOutcome> {
  const startedMs = performance.now();
  const { log } = parts;
  const failed = (step: string) => (error: unknown) => log.warn(`${step} failed: ${String(error)}`);
  log.info("shutting down: no new connections; finishing requests in flight");
  const running = Promise.all([
    parts.closeServer().catch(failed("closing the HTTP server")),
    parts.stopJobs().catch(failed("stopping the background jobs")),
  ]);
  const isWithinDeadline = await settlesWithin(running, parts.deadlineMs);
  if (!isWithinDeadline) {
    log.warn(`shutdown deadline of ${parts.deadlineMs} ms passed: closing the connections still open`);
    parts.cutConnections();
    // Requests end with their sockets; a job stuck past a second deadline is left behind.
    if (!(await settlesWithin(running, parts.deadlineMs))) log.warn("background jobs did not stop in time");
  }
  await parts.flush().catch(failed("flushing batched writes"));
  await parts.closeDeps();
  const durationMs = Math.round(performance.now() - startedMs);
  log.info(`stopped in ${durationMs} ms`);
  return { isWithinDeadline, durationMs };
}

/** Resolves on the first SIGTERM or SIGINT; a second one ends the process at once (exit 130). */
export function stopRequested(onSecond: () => void = () => process.exit(130)): {
  signal: AbortSignal;
  stopped: Promise<NodeJS.Signals>;
} {
  const controller = new AbortController();
  const stopped = new Promise<NodeJS.Signals>((resolve) => {
    const first = (signal: NodeJS.Signals) => {
      process.off("SIGINT", first);
      process.off("SIGTERM", first);
      process.once("SIGINT", onSecond);
      process.once("SIGTERM", onSecond);
      controller.abort();
      resolve(signal);
    };
    process.on("SIGINT", first);
    process.on("SIGTERM", first);
  });
  return { signal: controller.signal, stopped };
}
