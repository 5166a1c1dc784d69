// Server leases with injected clocks, on whichever dialect DATABASE_URL selects (the statements are
// the same on both; production uses them on PostgreSQL only): the live instances share the servers
// out, a joining one gets its share only after the holder has handed it over (and only once the
// holder's work on it has ended), a crashed one's servers are taken after expiry, a clean shutdown
// hands over at once (a dead one's heartbeat row is pruned), and the holder gives a lease up locally
// before it can expire.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { LeasesRepository } from "./leases.repository.ts";
import { DatabaseLeases } from "./leases.ts";

let t: TestApp;
let serverIds: string[];
let repository: LeasesRepository;

before(async () => {
  t = await createTestApp();
  serverIds = [(await registerServer(t, 9)).id, (await registerServer(t, 10)).id];
  repository = new LeasesRepository(t.deps.database.db);
});
after(() => t.close());
beforeEach(async () => {
  await t.deps.database.db.deleteFrom("server_leases").execute();
  await t.deps.database.db.deleteFrom("panel_instances").execute();
});

const T0 = Date.parse("2026-11-21T10:00:00.000Z");

/** An instance with its own wall and monotonic clocks, both under the test's control. */
function instance(name: string, ttlMs = 15_000) {
  const clock = { wallMs: T0, monotonicMs: 0 };
  const leases = new DatabaseLeases(repository, {
    ttlMs,
    holder: name,
    now: () => new Date(clock.wallMs),
    monotonicMs: () => clock.monotonicMs,
  });
  const advance = (ms: number) => {
    clock.wallMs += ms;
    clock.monotonicMs += ms;
  };
  const held = async () => [...(await leases.claim(serverIds))].sort();
  return { leases, advance, held };
}

const holderOf = async (serverId: string) => (await repository.find(serverId))?.holder;
/** The rows of a handover are deleted in the background once the giver's work has ended. */
const released = (serverIds: string[], by: string) =>
  waitFor(async () => (await Promise.all(serverIds.map(holderOf))).every((h) => h !== by), {
    what: `${by} to release its lease rows`,
  });

describe("server leases", () => {
  test("alone, an instance holds every server and keeps them by renewing", async () => {
    const a = instance("a");
    assert.deepEqual(await a.held(), [...serverIds].sort());
    a.advance(10_000);
    assert.deepEqual(await a.held(), [...serverIds].sort(), "renewed");
  });

  test("a second instance gets its share once the first has handed it over; nobody holds a server twice", async () => {
    const [a, b] = [instance("a"), instance("b")];
    assert.equal((await a.held()).length, 2);
    assert.deepEqual(await b.held(), [], "a still holds them: b waits");
    const aHolds = await a.held();
    assert.equal(aHolds.length, 1, "a sees b and keeps only its own share");
    const given = serverIds.filter((id) => !aHolds.includes(id));
    assert.equal(a.leases.holds(given[0] ?? ""), false, "a stopped acting on the server it gave");
    await released(given, "a");
    const bHolds = await b.held();
    assert.deepEqual(bHolds, given, "b takes what a gave");
    assert.deepEqual([...aHolds, ...bHolds].sort(), [...serverIds].sort());
    assert.deepEqual(await a.held(), aHolds, "a keeps its share");
  });

  test("a handover waits for the giver's work on the server to end", async () => {
    const [a, b] = [instance("a"), instance("b")];
    await a.held();
    let finish = () => {};
    const work = new Promise<void>((resolve) => {
      finish = resolve;
    });
    a.leases.track(serverIds, work);
    const signals = new Map(serverIds.map((id) => [id, a.leases.signalFor(id)]));
    await b.held();
    const aHolds = await a.held();
    const given = serverIds.filter((id) => !aHolds.includes(id));
    const id = given[0] ?? "";
    assert.equal(a.leases.holds(id), false);
    assert.equal(signals.get(id)?.aborted, true, "a's running work was asked to stop when a gave the server");
    assert.equal(signals.get(aHolds[0] ?? "")?.aborted, false, "work on the server a keeps goes on");
    assert.equal(await holderOf(id), "a", "the row stays a's while its work runs");
    assert.deepEqual(await b.held(), [], "b may not start yet");
    finish();
    await released(given, "a");
    assert.deepEqual(await b.held(), given);
  });

  test("a crashed instance's servers go to the others after its heartbeat and leases expire", async () => {
    const [a, b] = [instance("a"), instance("b")];
    await a.held();
    await b.held();
    const aHolds = await a.held();
    await released(
      serverIds.filter((id) => !aHolds.includes(id)),
      "a",
    );
    await b.held();
    // a stops renewing (killed): for 15 s b still counts it and leaves its servers alone.
    b.advance(14_000);
    assert.equal((await b.held()).length, 1, "a's heartbeat and lease still run");
    b.advance(1_001);
    assert.deepEqual(await b.held(), [...serverIds].sort(), "expired: b takes everything");
    const heartbeats = await t.deps.database.db.selectFrom("panel_instances").select("name").execute();
    assert.deepEqual(
      heartbeats.map((row) => row.name),
      ["b"],
      "the dead instance's heartbeat row is pruned, not kept for good",
    );
    a.advance(15_001);
    assert.deepEqual(await a.held(), [], "a, back, holds nothing b renews");
  });

  test("the holder stops trusting a lease it could not renew before anyone else may take it", async () => {
    const a = instance("c", 9000);
    await a.leases.claim(serverIds);
    const signal = a.leases.signalFor(serverIds[0] ?? "");
    a.advance(5_999);
    assert.equal(a.leases.holds(serverIds[0] ?? ""), true);
    a.advance(1);
    assert.equal(a.leases.holds(serverIds[0] ?? ""), false, "ttl minus a third, measured from the renewal");
    await waitFor(() => signal.aborted, { what: "the lapsed lease's work to be cancelled" });
  });

  test("release on shutdown hands every server over at once", async () => {
    const [a, b] = [instance("d"), instance("e")];
    await a.held();
    await b.held();
    await a.leases.release();
    assert.deepEqual(await b.held(), [...serverIds].sort());
  });

  test("servers deleted meanwhile are skipped, not an error", async () => {
    const a = instance("f");
    const ghost = "00000000-0000-4000-8000-000000000000";
    assert.equal((await a.leases.claim([ghost])).size, 0);
  });
});
