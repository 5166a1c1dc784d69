// When the agent cuts a removed user's open connections: a user removed by name at once; users
// dropped with a replaced inbound only if the panel's re-adds leave them out once its calls go quiet,
// and at the latest after the maximum wait. Pure, with a clock in numbers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CutSchedule, REPLACE_MAX_WAIT_MS, REPLACE_QUIET_MS } from "./cut-schedule.ts";

describe("cutting removed users' connections", () => {
  test("a user removed by name is cut at once", () => {
    const cuts = new CutSchedule();
    cuts.noteChange({ kind: "remove-user", email: "gone@x" }, [], 1000);
    assert.deepEqual(cuts.due(["gone@x"], 1250), { cut: ["gone@x"], retryInMs: undefined });
  });

  test("a replaced inbound: users added back are never cut, the one left out is cut once the calls are quiet", () => {
    const cuts = new CutSchedule();
    cuts.noteChange({ kind: "remove-inbound" }, ["calm@x", "sharer@x"], 1000);
    cuts.noteChange({ kind: "add-inbound" }, [], 1010);
    // the settle timer fires before the re-adds: nobody is cut yet
    assert.deepEqual(cuts.due(["calm@x", "sharer@x"], 1260), { cut: [], retryInMs: 750 });
    cuts.noteChange({ kind: "add-user", email: "calm@x" }, [], 1800);
    // calm is back; the sharer waits for a quiet second after the last call
    assert.deepEqual(cuts.due(["sharer@x"], 2010), { cut: [], retryInMs: REPLACE_QUIET_MS - 210 });
    assert.deepEqual(cuts.due(["sharer@x"], 1800 + REPLACE_QUIET_MS), {
      cut: ["sharer@x"],
      retryInMs: undefined,
    });
  });

  test("a panel that never goes quiet still gets a dropped user cut after the maximum wait", () => {
    const cuts = new CutSchedule();
    cuts.noteChange({ kind: "remove-inbound" }, ["sharer@x"], 0);
    for (let at = 100; at < REPLACE_MAX_WAIT_MS; at += 500) {
      cuts.noteChange({ kind: "add-user", email: `other-${at}@x` }, [], at);
      assert.deepEqual(cuts.due(["sharer@x"], at).cut, []);
    }
    assert.deepEqual(cuts.due(["sharer@x"], REPLACE_MAX_WAIT_MS).cut, ["sharer@x"]);
  });

  test("removed by name after being dropped: cut at once", () => {
    const cuts = new CutSchedule();
    cuts.noteChange({ kind: "remove-inbound" }, ["a@x"], 0);
    cuts.noteChange({ kind: "remove-user", email: "a@x" }, [], 10);
    assert.deepEqual(cuts.due(["a@x"], 20).cut, ["a@x"]);
  });
});
