// The order of a graceful shutdown, with stand-ins for its parts: the server and the jobs stop side
// by side, batched writes are flushed only after both (nothing writes behind the flush), the database
// closes last, and the deadline cuts connections without skipping the rest.
import assert from "node:assert/strict";
import { test } from "node:test";
import { type ShutdownParts, shutDown } from "./shutdown.ts";

function deferred() {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function recordingParts(server: Promise<void>, deadlineMs: number) {
  const events: string[] = [];
  const parts: ShutdownParts = {
    closeServer: async () => {
      events.push("server closing");
      await server;
      events.push("server closed");
    },
    cutConnections: () => events.push("connections cut"),
    stopJobs: async () => {
      events.push("jobs stopped, leases released");
    },
    flush: async () => {
      events.push("flushed");
    },
    closeDeps: async () => {
      events.push("database closed");
    },
    log: { info: () => undefined, warn: (message) => events.push(`warn: ${message}`) },
    deadlineMs,
  };
  return { events, parts };
}

test("requests finish and jobs stop before the flush; the database closes last", async () => {
  const server = deferred();
  const { events, parts } = recordingParts(server.promise, 10_000);
  const done = shutDown(parts);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(events, ["server closing", "jobs stopped, leases released"], "flush waits for requests");
  server.resolve();
  const outcome = await done;
  assert.equal(outcome.isWithinDeadline, true);
  assert.deepEqual(events, [
    "server closing",
    "jobs stopped, leases released",
    "server closed",
    "flushed",
    "database closed",
  ]);
});

test("past the deadline open connections are cut, then the flush and the close still run", async () => {
  const server = deferred();
  const { events, parts } = recordingParts(server.promise, 50);
  parts.cutConnections = () => {
    events.push("connections cut");
    server.resolve();
  };
  const outcome = await shutDown(parts);
  assert.equal(outcome.isWithinDeadline, false);
  assert.deepEqual(events, [
    "server closing",
    "jobs stopped, leases released",
    "warn: shutdown deadline of 50 ms passed: closing the connections still open",
    "connections cut",
    "server closed",
    "flushed",
    "database closed",
  ]);
});

test("a failing step is logged and the database is still closed", async () => {
  const { events, parts } = recordingParts(Promise.resolve(), 1000);
  parts.flush = async () => {
    throw new Error("database is locked");
  };
  await shutDown(parts);
  assert.deepEqual(events.slice(-2), [
    "warn: flushing batched writes failed: Error: database is locked",
    "database closed",
  ]);
});
