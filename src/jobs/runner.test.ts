// The job runner: runs each job again after its interval, survives a failing run, and stop() ends the
// loops (aborting a run in progress) before it resolves.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import { waitFor } from "../../test/support/poll.ts";
import { type Job, startJobs } from "./runner.ts";

describe("job runner", () => {
  test("repeats runs, keeps going after a failure, and stops cleanly", async (ctx) => {
    let runs = 0;
    let sawAbort = false;
    const job: Job = {
      name: "counting",
      intervalMs: 5,
      async run({ signal }) {
        runs += 1;
        if (runs === 2) throw new Error("a failed run");
        if (runs >= 4) {
          await new Promise<void>((resolve) =>
            signal.addEventListener("abort", () => resolve(), { once: true }),
          );
          sawAbort = signal.aborted;
        }
      },
    };
    const running = startJobs([job], pino({ enabled: false }));
    ctx.after(() => running.stop()); // stop() is idempotent: this one only matters if the test fails
    await waitFor(() => runs >= 4, { what: "four runs" });
    await running.stop();
    assert.equal(sawAbort, true, "the run in progress saw the abort");
    const stoppedAt = runs;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(runs, stoppedAt, "no run after stop()");
  });
});
