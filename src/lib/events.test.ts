// The change bus: listeners run one after another in the order they were added, every one runs even
// when an earlier one fails, and the emitter learns of the first failure.
import assert from "node:assert/strict";
import { test } from "node:test";
import { type ChangeEvents, EventBus } from "./events.ts";

test("listeners run in the order they were added, each to the end before the next", async () => {
  const bus = new EventBus<ChangeEvents>();
  const seen: string[] = [];
  bus.on("certificateChanged", async (id) => {
    await new Promise((resolve) => setImmediate(resolve));
    seen.push(`links ${id}`);
  });
  bus.on("certificateChanged", async (id) => {
    seen.push(`cache ${id}`);
  });
  await bus.emit("certificateChanged", "c1");
  assert.deepEqual(seen, ["links c1", "cache c1"]);
});

test("a failing listener does not stop the others; the first failure is thrown after all ran", async () => {
  const bus = new EventBus<ChangeEvents>();
  const seen: string[] = [];
  bus.on("serverDeleting", async () => {
    throw new Error("first");
  });
  bus.on("serverDeleting", async () => {
    seen.push("second ran");
    throw new Error("second");
  });
  await assert.rejects(bus.emit("serverDeleting", "s1"), /first/);
  assert.deepEqual(seen, ["second ran"]);
});

test("an event nobody listens to is a no-op", async () => {
  await new EventBus<ChangeEvents>().emit("templateChanged", "t1");
});
