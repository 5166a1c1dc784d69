// Server leases with injected clocks, on whichever dialect DATABASE_URL selects (the statement is
// the same on both; production uses it on PostgreSQL only): one holder at a time, renewals, takeover
// after expiry, release on shutdown, and the holder giving a lease up locally before it can expire.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { LeasesRepository } from "./leases.repository.ts";
import { DatabaseLeases } from "./leases.ts";

let t: TestApp;
let serverIds: string[];

before(async () => {
  t = await createTestApp();
  serverIds = [(await registerServer(t, 9)).id, (await registerServer(t, 10)).id];
});
after(() => t.close());

const T0 = Date.parse("2026-11-21T10:00:00.000Z");

/** An instance with its own wall and monotonic clocks, both under the test's control. */
function instance(name: string, ttlMs = 15_000) {
  const clock = { wallMs: T0, monotonicMs: 0 };
  const leases = new DatabaseLeases(new LeasesRepository(t.deps.database.db), {
    ttlMs,
    holder: name,
    now: () => new Date(clock.wallMs),
    monotonicMs: () => clock.monotonicMs,
  });
  const advance = (ms: number) => {
    clock.wallMs += ms;
    clock.monotonicMs += ms;
  };
  return { leases, advance };
}

describe("server leases", () => {
  test("one holder at a time; renewals keep it; the other takes over only after expiry", async () => {
    const [a, b] = [instance("a"), instance("b")];
    assert.deepEqual([...(await a.leases.claim(serverIds))].sort(), [...serverIds].sort());
    assert.deepEqual([...(await b.leases.claim(serverIds))], [], "held by a");
    a.advance(10_000);
    b.advance(10_000);
    assert.equal((await a.leases.claim(serverIds)).size, 2, "a renews");
    b.advance(14_000);
    assert.equal((await b.leases.claim(serverIds)).size, 0, "a's renewal still runs");
    b.advance(1_001);
    assert.equal((await b.leases.claim(serverIds)).size, 2, "expired: b takes over");
    const signal = a.leases.signalFor(serverIds[0] ?? "");
    a.advance(1_000);
    assert.equal((await a.leases.claim(serverIds)).size, 0, "a lost them");
    assert.equal(signal.aborted, true, "work for a lost server is cancelled");
    assert.equal(a.leases.holds(serverIds[0] ?? ""), false);
  });

  test("the holder stops trusting a lease it could not renew before anyone else may take it", async () => {
    const a = instance("c", 9000);
    await t.deps.database.db.deleteFrom("server_leases").execute();
    await a.leases.claim(serverIds);
    a.advance(5_999);
    assert.equal(a.leases.holds(serverIds[0] ?? ""), true);
    a.advance(1);
    assert.equal(a.leases.holds(serverIds[0] ?? ""), false, "ttl minus a third, measured from the renewal");
  });

  test("release hands every server over at once", async () => {
    const [a, b] = [instance("d"), instance("e")];
    await t.deps.database.db.deleteFrom("server_leases").execute();
    await a.leases.claim(serverIds);
    await a.leases.release();
    assert.equal((await b.leases.claim(serverIds)).size, 2);
  });

  test("servers deleted meanwhile are skipped, not an error", async () => {
    const a = instance("f");
    const ghost = "00000000-0000-4000-8000-000000000000";
    assert.equal((await a.leases.claim([ghost])).size, 0);
  });
});
