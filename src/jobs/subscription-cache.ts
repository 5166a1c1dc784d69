// Keeps this instance's subscriptions in memory equal to the database: reads the change feed every
// PORTCULLIS_SUB_CACHE_SYNC_MS (what other instances, CLI commands and background work wrote; API
// writes of this instance are caught up before they answer), reads changed inbounds again so their
// layouts serve from memory again, and prunes changes every reader has had time to see. Also the
// warm-up: `serve` reads every user before it listens (bounded in time, the rest in this job), so a
// restart does not turn every poll into a database read. It reads every user's traffic totals again
// within three quarters of the max age or less (refreshTotals()), so a record in memory never ages
// out while its user polls (used_bytes grows without a change row). And every
// FETCHES_FLUSH_INTERVAL_MS it writes the /sub fetches noted since (users.sub_updated_at /
// sub_last_user_agent, in one batch).
import { getHeapStatistics } from "node:v8";
import type { Logger } from "pino";
import type { SubscriptionsService } from "../features/subscriptions/subscriptions.service.ts";
import type { Job } from "./runner.ts";

export type SubscriptionCacheJobOptions = {
  subscriptions: SubscriptionsService;
  logger: Logger;
  intervalMs: number;
  /** Fill the cache after the first run (what warmBeforeListening left over). */
  warm: boolean;
};

const PRUNE_INTERVAL_MS = 60_000;
/** sub_updated_at is at most about this much (plus the job's interval) behind the fetch. */
export const FETCHES_FLUSH_INTERVAL_MS = 5_000;
/**
 * What a flush may spend writing fetches (2 % of the interval): a few thousand users a flush on this
 * machine, far more than clients polling every few hours send; a backlog (a restart under a flood of
 * polls, a benchmark) is written over the next flushes instead of holding up requests.
 */
export const FETCHES_FLUSH_BUDGET_MS = 100;

export function subscriptionCacheJob(options: SubscriptionCacheJobOptions): Job {
  const { subscriptions, logger } = options;
  let warming: Promise<void> | undefined;
  let prunedAtMs = 0;
  let flushedAtMs = Date.now();
  return {
    name: "subscription-cache",
    intervalMs: options.intervalMs,
    async run({ signal }) {
      if (Date.now() - flushedAtMs >= FETCHES_FLUSH_INTERVAL_MS) {
        flushedAtMs = Date.now();
        await subscriptions.flushFetches(FETCHES_FLUSH_BUDGET_MS).catch((error: unknown) => {
          logger.warn(
            { job: "subscription-cache", err: error },
            "subscription fetches not written; kept for the next try",
          );
        });
      }
      await subscriptions.catchUp();
      await subscriptions.reviveLayouts();
      await subscriptions.refreshTotals().catch((error: unknown) => {
        logger.warn(
          { job: "subscription-cache", err: error },
          "traffic totals in memory not refreshed; records past the max age are read again",
        );
      });
      if (options.warm) warming ??= warm(subscriptions, logger, signal).then(() => undefined);
      if (Date.now() - prunedAtMs >= PRUNE_INTERVAL_MS) {
        prunedAtMs = Date.now();
        const pruned = await subscriptions.pruneChanges();
        if (pruned > 0) logger.debug({ job: "subscription-cache", pruned }, "subscription changes pruned");
      }
    },
    drain: () => warming ?? Promise.resolve(),
  };
}

/** Warms for at most `timeoutMs`; true when every user fitting the budget is cached. */
export function warmBeforeListening(
  subscriptions: SubscriptionsService,
  logger: Logger,
  timeoutMs: number,
): Promise<boolean> {
  return warm(subscriptions, logger, AbortSignal.timeout(timeoutMs));
}

async function warm(
  subscriptions: SubscriptionsService,
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  const startedMs = performance.now();
  try {
    const collector = warmGarbageCollector();
    const users = await subscriptions.warm(signal, collector.betweenBatches);
    // Reading every user leaves tens of MB of rows behind (100 MB at 100,000 users) that V8 would
    // hold until its next full collection, which under a load of polls can be minutes away.
    if (users > 0) collector.collect();
    const { entries, bytes, budgetBytes } = subscriptions.stats();
    logger.info(
      {
        job: "subscription-cache",
        users,
        entries,
        cache_mb: +(bytes / 2 ** 20).toFixed(1),
        budget_mb: +(budgetBytes / 2 ** 20).toFixed(1),
        seconds: +((performance.now() - startedMs) / 1000).toFixed(1),
      },
      signal.aborted ? "subscriptions partly in memory" : "subscriptions in memory",
    );
    return !signal.aborted;
  } catch (error) {
    logger.warn({ job: "subscription-cache", err: error }, "subscriptions not read into memory");
    return false;
  }
}

/** Garbage the warm-up may leave on V8's heap before a full collection (with `--expose-gc`). */
export const WARM_GARBAGE_BYTES = 32 * 2 ** 20;

/**
 * Full garbage collections for the warm-up, when the process runs with `--expose-gc` (`npm start`
 * does; without it both do nothing). Each batch's rows live across a turn of the event loop, so many
 * outlive two scavenges and are promoted, and V8 lets its old generation grow to about four times what
 * it kept after its last full collection before the next one: reading 1,000,000 users took the heap
 * to 210–257 MB committed, which it kept for about 100 s after the warm-up (RSS 566 MB when every user
 * was in memory, 466 once V8's memory reducer had run). `betweenBatches` collects whenever the heap has
 * grown WARM_GARBAGE_BYTES since the last collection, so it never commits much more than what it keeps
 * plus that; `collect` runs once at the end, so the warm-up's garbage is handed back before the polls
 * come. About 110 ms each on a slow machine (60 MB live), one per 10–15 batches at a million users.
 * 32 MiB rather than 64: at 100,000 users the warm-up's peak was 249–250 MB with 64 and 236–243 with
 * 32 (the service's peak since its start; about 225 once idle either way), at the cost of 71 collections
 * instead of 37 at a million users (8.6 s of a 100 s warm-up instead of 4 s, on a slow machine).
 */
export function warmGarbageCollector(
  gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc,
  usedHeapBytes: () => number = () => getHeapStatistics().used_heap_size,
  garbageBytes = WARM_GARBAGE_BYTES,
): { betweenBatches: () => void; collect: () => void } {
  if (gc === undefined) return { betweenBatches: () => {}, collect: () => {} };
  let floor = usedHeapBytes();
  const collect = () => {
    gc();
    floor = usedHeapBytes();
  };
  return {
    betweenBatches: () => {
      if (usedHeapBytes() - floor >= garbageBytes) collect();
    },
    collect,
  };
}
