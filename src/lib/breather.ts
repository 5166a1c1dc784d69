// Long runs of awaited work that settles in microtasks (SQLite statements, a stream of answered core
// calls, building thousands of users) never let the event loop poll for I/O, so an API request waits
// for the whole run. A breather lets it in: once its callers have held the loop for `budgetMs`, every
// caller awaits one setImmediate (after pending I/O) together, then the budget starts again.
import { setImmediate as afterIo } from "node:timers/promises";

/** undefined: go on; a promise: await it first (the loop polls I/O meanwhile). */
export type Breather = () => Promise<void> | undefined;

export function breather(budgetMs = 8): Breather {
  let since = performance.now();
  let pause: Promise<void> | undefined;
  return () => {
    if (pause !== undefined) return pause;
    if (performance.now() - since < budgetMs) return undefined;
    pause = afterIo().then(() => {
      since = performance.now();
      pause = undefined;
    });
    return pause;
  };
}

/** One budget for all provisioning work of the process: the API's requests wait at most about this long. */
export const syncBreather: Breather = breather();
