// The change → reactions table is the wiring: what deps.ts subscribes is exactly the table, every
// write route of the app is placed in the read-your-writes table, every change of the catalogue has a
// reaction, and every trigger names catalogued changes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { TRIGGERS } from "../db/triggers.ts";
import { DATABASE_CHANGES, EVENT_CHANGES, type EventChange } from "../domain/changes.ts";
import {
  classifyWrite,
  databaseReactions,
  EVENT_REACTIONS,
  NOT_SUBSCRIPTION_WRITES,
  READ_YOUR_WRITES,
} from "./reactions.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

test("deps.ts subscribes exactly the table's reactions, and wires no listener by hand", () => {
  for (const change of Object.keys(EVENT_CHANGES) as EventChange[]) {
    const rows = EVENT_REACTIONS.filter((reaction) => reaction.change === change).length;
    assert.ok(rows > 0, `${change} has a reaction in the table`);
    assert.equal(t.deps.events.listenerCount(change), rows, `${change}: listeners = table rows`);
  }
  const deps = readFileSync(new URL("../deps.ts", import.meta.url), "utf8");
  assert.doesNotMatch(deps, /\bevents\.on\(|\.on\("/, "deps.ts calls wireReactions, never .on(");
  assert.match(deps, /wireReactions\(events,/);
});

test("every write route is in the read-your-writes table, and every entry there is used", () => {
  const writes = t.app.routeTable.filter(
    (route) => WRITES.has(route.method) && route.url.startsWith("/api/"),
  );
  assert.ok(writes.length > 40, `the app's write routes are read (${writes.length})`);
  const unplaced = writes.filter((route) => classifyWrite(route.url) === undefined);
  assert.deepEqual(
    unplaced.map((route) => `${route.method} ${route.url}`),
    [],
    "place these in READ_YOUR_WRITES or NOT_SUBSCRIPTION_WRITES (src/reactions/reactions.ts)",
  );
  for (const prefix of [...READ_YOUR_WRITES, ...NOT_SUBSCRIPTION_WRITES]) {
    assert.ok(
      writes.some((route) => route.url === prefix || route.url.startsWith(`${prefix}/`)),
      `${prefix} names a write route`,
    );
  }
});

test("every database change has a trigger, and the catalogue names every change a trigger answers", () => {
  const byChange = databaseReactions();
  for (const change of Object.keys(DATABASE_CHANGES)) {
    assert.ok(
      (byChange.get(change as keyof typeof DATABASE_CHANGES)?.length ?? 0) > 0,
      `${change} has a trigger`,
    );
  }
  for (const trigger of TRIGGERS) {
    assert.ok(trigger.changes.length > 0, `${trigger.name} names its changes`);
    for (const change of trigger.changes) assert.ok(change in DATABASE_CHANGES, `${trigger.name}: ${change}`);
  }
  // "A user becomes limited": the status change, answered by provisioning and the change feed.
  assert.deepEqual(
    (byChange.get("user.status") ?? []).map((line) => line.split(":")[0]),
    ["users_admission_changed", "subscription_changes_user_lifecycle"],
  );
});
