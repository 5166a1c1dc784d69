// The breather's rules, with no I/O of its own: callers past the budget are let go one per turn of
// the event loop, in the order they came, so the loop polls for requests between any two of them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { breather } from "./breather.ts";

/** Counts the event loop's turns: a setImmediate that queues itself again (one run per turn). */
function turnCounter() {
  let turns = 0;
  let isStopped = false;
  const tick = () => {
    turns += 1;
    if (!isStopped) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    now: () => turns,
    stop: () => {
      isStopped = true;
    },
  };
}

describe("breather", () => {
  test("callers past the budget are let go one per turn of the event loop, in order", async () => {
    const breathe = breather(0); // a budget of 0 ms: every caller waits for a turn
    const counter = turnCounter();
    const letGo: { name: string; turn: number }[] = [];
    const caller = async (name: string) => {
      await breathe();
      letGo.push({ name, turn: counter.now() });
    };
    await Promise.all(["a", "b", "c", "d"].map(caller));
    counter.stop();
    assert.deepEqual(
      letGo.map((g) => g.name),
      ["a", "b", "c", "d"],
    );
    for (let i = 1; i < letGo.length; i++) {
      const [before, now] = [letGo[i - 1], letGo[i]];
      assert.ok(before !== undefined && now !== undefined);
      assert.ok(now.turn > before.turn, `${now.name} let go in a later turn than ${before.name}`);
    }
  });

  test("a caller within the budget goes on without waiting", () => {
    const breathe = breather(60_000);
    assert.equal(breathe(), undefined);
  });

  test("turn() waits for a turn of its own even within the budget", async () => {
    const breathe = breather(60_000);
    const counter = turnCounter();
    const at = counter.now();
    const waiting = breathe.turn();
    assert.ok(waiting instanceof Promise);
    await waiting;
    counter.stop();
    assert.ok(counter.now() > at, "the event loop turned before it was let go");
  });
});
