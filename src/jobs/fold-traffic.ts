// The traffic fold in a loop of its own (issue 52): at a million users with traffic a fold takes
// minutes, and the polls must keep their interval (what a core counts meanwhile is safe on the core,
// but a late poll is a late limit for everyone). The traffic job asks for a fold after each poll
// (request()) and goes back to polling; one fold runs at a time and takes everything journaled by
// then, so polls that arrive during a fold are taken together by the next one, each user written
// once per hour bucket. After a fold that moved the totals (rows folded, or a poll that counted
// straight into them: node agents) the lifecycle tick runs on the new totals (limits trail the cores
// by one fold); an idle fleet's empty polls do not run it again (the lifecycle job's own interval
// does: issue 52). stop: the fold in progress ends after its current transaction (drain()).
import type { Logger } from "pino";
import type { Folded } from "../features/traffic/traffic.repository.ts";

export type TrafficFolder = {
  /**
   * A fold soon: now if none is running, else right after the one running (requests coalesce).
   * `isCounted`: the poll moved the totals itself (an agent's batches), so the lifecycle tick runs
   * after the fold even when it folds nothing.
   */
  request(isCounted?: boolean): void;
  /** Resolves when no fold is running or asked for (tests; shutdown). */
  idle(): Promise<void>;
  /** Stops asking: the fold in progress ends after its current transaction; resolves when it has. */
  drain(): Promise<void>;
};

export type TrafficFolderOptions = {
  traffic: { fold(options: { signal?: AbortSignal }): Promise<Folded> };
  logger: Logger;
  /** Run after each fold that moved the totals (the lifecycle tick). */
  afterFold?: () => Promise<unknown>;
};

export function trafficFolder(options: TrafficFolderOptions): TrafficFolder {
  const { traffic, logger, afterFold } = options;
  const controller = new AbortController();
  let isRequested = false;
  let isCounted = false;
  let running: Promise<void> | undefined;

  async function loop(): Promise<void> {
    while (isRequested && !controller.signal.aborted) {
      isRequested = false;
      const hasCounted = isCounted;
      isCounted = false;
      try {
        const startedAt = performance.now();
        const folded = await traffic.fold({ signal: controller.signal });
        if (folded.rows > 0) {
          const ms = Math.round(performance.now() - startedAt);
          logger.debug({ job: "fold-traffic", rows: folded.rows, users: folded.users, ms }, "traffic folded");
        }
        const isMoved = folded.rows > 0 || hasCounted;
        if (isMoved && !controller.signal.aborted && afterFold !== undefined) await afterFold();
      } catch (error) {
        logger.error({ job: "fold-traffic", err: error }, "traffic fold failed");
      }
    }
  }

  function start(): void {
    running = loop().finally(() => {
      running = undefined;
      // A request that came after the loop's last check and before this: not lost.
      if (isRequested && !controller.signal.aborted) start();
    });
  }

  return {
    request(counted = false) {
      isRequested = true;
      if (counted) isCounted = true;
      if (running === undefined && !controller.signal.aborted) start();
    },
    async idle() {
      while (running !== undefined) await running;
    },
    async drain() {
      controller.abort();
      await this.idle();
    },
  };
}
