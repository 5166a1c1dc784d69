// Long runs of awaited work that settles in microtasks (SQLite statements, a stream of answered core
// calls, building thousands of users) never let the event loop poll for I/O, so an API request waits
// for the whole run. A breather lets it in: once its callers have held the loop for `budgetMs`, they
// wait in line and are let go one per turn of the event loop (a setImmediate each, after pending
// I/O), each turn with a fresh budget. One at a time, not all together: four reconciles and the
// subscription warm-up let go in the same turn each ran its next statement (30–450 ms each under
// load) before the loop polled again, so a request waited for all of them (docs/benchmarks/fleet.md).
import { setImmediate as afterIo } from "node:timers/promises";

/** undefined: go on; a promise: await it first (the loop polls I/O meanwhile). */
export type Breather = {
  (): Promise<void> | undefined;
  /** Always waits for a turn of its own (work that yields after every step whatever the budget). */
  turn(): Promise<void>;
};

export function breather(budgetMs = 8): Breather {
  let since = performance.now();
  const line: (() => void)[] = [];
  let isTurnDue = false;
  const nextTurn = () => {
    if (isTurnDue) return;
    isTurnDue = true;
    void afterIo().then(() => {
      isTurnDue = false;
      since = performance.now();
      line.shift()?.();
      if (line.length > 0) nextTurn();
    });
  };
  const turn = () =>
    new Promise<void>((resolve) => {
      line.push(resolve);
      nextTurn();
    });
  const breathe = () => {
    // Within the budget of the current turn a caller goes on (a short step answered by I/O need not
    // queue); past it, it queues: a turn then holds at most about the budget plus one step.
    if (performance.now() - since < budgetMs) return undefined;
    return turn();
  };
  return Object.assign(breathe, { turn });
}

/**
 * One line for the process's background work (provisioning, the subscription warm-up): the API's
 * requests wait at most about the budget plus one step of it.
 */
export const syncBreather: Breather = breather();
