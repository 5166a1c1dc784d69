// The lifecycle on a real V2Ray core with a real v2ray client, on whichever dialect DATABASE_URL
// selects (issue 12's acceptance):
// - a user with a 2 MiB limit pulls up to 4 MiB: within two traffic intervals they are `limited` and the
//   client's next connection fails; raising the limit lets the same client through within 5 s, with
//   the same core process;
// - with an injected clock: expiry removes a user, a period reset re-admits a limited user at once,
//   on-hold starts the clock at the first traffic (and at the timeout).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { startConvergence } from "../../../test/support/convergence.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  carries,
  createInbound,
  expectBlocked,
  expectCarries,
  grant,
  registerServer,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import {
  CleanupStack,
  fetchViaSocks,
  startHttpServer,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";
import type { RunningJobs } from "../../jobs/runner.ts";
import { LifecycleRepository } from "./lifecycle.repository.ts";
import { LifecycleService } from "./lifecycle.service.ts";

const needs = requires("v2ray");

const MIB = 1024 * 1024;
const TRAFFIC_MS = 1000;
const stack = new CleanupStack();
const BODY = randomBytes(MIB);
let t: TestApp;
let core: V2rayServer;
let httpPort: number;
let templateId: string;
/** Every job set a test starts: each test stops its own in `finally`, and `after` stops any left. */
const allJobs: RunningJobs[] = [];
function startJobs(intervals: Parameters<typeof startConvergence>[2]): RunningJobs {
  const running = startConvergence(t.deps, t.deps.logger, intervals).running;
  allJobs.push(running);
  return running;
}

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  core = await startV2rayServer(stack.add);
  httpPort = await startHttpServer(stack.add, BODY);
  templateId = (await templateFor(t, { protocol: "vless", network: "ws", tls: false })).id;
});
needs.after(async () => {
  // Each step runs even when one before it throws: a failed test must not leave a core or a job.
  const results = await Promise.allSettled(allJobs.map((jobs) => jobs.stop()));
  results.push(...(await Promise.allSettled([t?.close()])));
  results.push(...(await Promise.allSettled([stack.run()])));
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length > 0)
    throw new AggregateError(
      failed.map((r) => r.reason),
      "cleanup failed",
    );
});

type UserBody = { id: string; status: string; used_bytes: number; expire_at: string | null };

async function userOf(id: string): Promise<UserBody> {
  const res = await request(t, "GET", `/api/users/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as UserBody;
}

/** A user (created with `fields`) granted on a new inbound of its own server, and a client that carries. */
async function provisioned(name: string, fields: Record<string, unknown>) {
  const created = await request(t, "POST", "/api/users", { name, ...fields });
  assert.equal(created.statusCode, 201, created.body);
  const userId = (created.json() as { id: string }).id;
  const server = await registerServer(t, core.apiPort, { name: `${name} core` });
  const inbound = await createInbound(t, server.id, { template_id: templateId, port: await freePort() });
  const access = await grant(t, server.id, inbound.id, { user_id: userId });
  assert.equal(access.sync_state, "synced");
  const [link] = await subscriptionLinks(t, userId);
  assert.ok(link !== undefined);
  const socks = await startClient(stack.add, "v2ray", decodeLink(link));
  await expectCarries(socks, httpPort, BODY, `${name}'s client`);
  return { userId, serverId: server.id, socks };
}

/**
 * Pulls up to `count` MiB through the client (each a whole 1 MiB body); stops when the core cuts the
 * user off (a limit may bite in the middle). Returns the MiB that came through.
 */
async function pull(socks: number, count: number): Promise<number> {
  let pulled = 0;
  for (; pulled < count; pulled++) {
    const res = await fetchViaSocks(socks, { port: httpPort, path: "/" }, 10_000).catch(() => undefined);
    if (res?.body.length !== MIB) break;
  }
  return pulled;
}

describe("the lifecycle on a real core", needs, () => {
  test("a 2 MiB limit: limited once the traffic is counted, cut off, back within 5 s when raised", async () => {
    const pid = core.pid();
    const jobs = startJobs({ reconcileMs: 3000, trafficMs: TRAFFIC_MS, lifecycleMs: 60_000 });
    try {
      // 2 MiB: provisioned()'s 1 MiB check (and its overhead) stays under the limit however late the
      // traffic job counts it, so the first MiB pulled here always goes through.
      const p = await provisioned("capped", { data_limit_bytes: 2 * MIB });
      const pulled = await pull(p.socks, 3); // and 1 MiB by provisioned()'s check
      assert.ok(pulled >= 1, "more than the limit went through before the cut");
      const pulledAt = Date.now();
      const limited = await waitFor(
        async () => {
          const user = await userOf(p.userId);
          return user.status === "limited" && user;
        },
        // A deadline, not a timing: collection, fold and tick run in their own loops, and on a loaded
        // two-core machine two intervals are not enough (CI, 2026-12-03); how fast is bench:fleet's.
        { timeoutMs: 10 * TRAFFIC_MS + 5000, intervalMs: 50, what: "the user to be limited" },
      );
      const limitedAfterMs = Date.now() - pulledAt;
      // The limit bites on the first collection past 2 MiB; what came through after that collection is
      // counted by the next ones (the core keeps the counter of a user it dropped). On a loaded machine
      // that is a few intervals later: wait for the counter, don't race it.
      await waitFor(async () => (await userOf(p.userId)).used_bytes >= (1 + pulled) * MIB, {
        timeoutMs: 10 * TRAFFIC_MS + 5000,
        intervalMs: 100,
        what: `the traffic counter to reach the ${1 + pulled} MiB pulled (was ${limited.used_bytes} when limited)`,
      });
      await expectBlocked(p.socks, httpPort, BODY, "the limited user's client");
      const grants = (await request(t, "GET", `/api/users/${p.userId}/access`)).json();
      assert.equal(grants.length, 1, "the grant stays in the database");
      // The core drops the user before the grant's row says so: the row is written when the core's
      // answer comes back, so a client can be cut off a moment before it reads "synced".
      await waitFor(
        async () => {
          const [grant] = (await request(t, "GET", `/api/users/${p.userId}/access`)).json();
          return grant?.sync_state === "synced";
        },
        { timeoutMs: 5000, what: "the grant synced: the core agrees (the user is off it)" },
      );

      const raised = await request(t, "PUT", `/api/users/${p.userId}`, { data_limit_bytes: 100 * MIB });
      assert.equal(raised.json().status, "active");
      const raisedAt = Date.now();
      await waitFor(() => carries(p.socks, httpPort, BODY, 2000), {
        timeoutMs: 5000,
        what: "the same client to carry again",
      });
      const backAfterMs = Date.now() - raisedAt;
      assert.equal(core.pid(), pid, "the same core process");
      assert.ok(core.isAlive());
      t.deps.logger.info({ limitedAfterMs, backAfterMs }, "limit enforcement timings");
    } finally {
      await jobs.stop();
    }
  });

  test("an injected clock: expiry removes, a period reset re-admits at once, on-hold starts at first traffic", async () => {
    // Traffic and reconciles run on their own; the lifecycle ticks only when the test says, at its clock.
    const jobs = startJobs({ reconcileMs: 3000 });
    try {
      let clock = new Date();
      const lifecycle = new LifecycleService(
        new LifecycleRepository(t.deps.database.db, t.deps.database.dialect),
        { thresholds: [80, 95], expiringNoticeSeconds: 0 },
        () => clock,
        async () => {},
        t.deps.events,
      );
      const later = (ms: number) => new Date(Date.now() + ms);

      // expiry
      const expiring = await provisioned("expiring", { expire_at: later(86_400_000).toISOString() });
      await lifecycle.tick();
      assert.equal((await userOf(expiring.userId)).status, "active", "not yet");
      clock = later(2 * 86_400_000);
      const expired = await lifecycle.tick();
      assert.deepEqual(
        expired.expired.map((row) => row.id),
        [expiring.userId],
      );
      await expectBlocked(expiring.socks, httpPort, BODY, "the expired user's client");

      // period reset
      clock = new Date();
      const daily = await provisioned("daily", { data_limit_bytes: MIB, data_limit_reset: "day" });
      assert.equal(await pull(daily.socks, 1), 1, "nothing limits the traffic until a tick");
      await waitFor(
        async () => {
          await t.deps.services.traffic.collect(daily.serverId);
          return (await userOf(daily.userId)).used_bytes >= MIB;
        },
        { what: "the daily user's traffic to be counted" },
      );
      await lifecycle.tick();
      assert.equal((await userOf(daily.userId)).status, "limited");
      await expectBlocked(daily.socks, httpPort, BODY, "the limited daily user's client");
      const row = await t.deps.database.db
        .selectFrom("users")
        .select("next_reset_at")
        .where("id", "=", daily.userId)
        .executeTakeFirstOrThrow();
      clock = new Date(row.next_reset_at as string);
      const reset = await lifecycle.tick();
      assert.ok(reset.resets >= 1);
      const after = await userOf(daily.userId);
      assert.deepEqual([after.status, after.used_bytes], ["active", 0]);
      const resetAt = Date.now();
      // "At once" is the wake of the reconciler by the tick (no reconcile interval waited for: it is
      // 3 s here); the logged time says how long it took. The bound only keeps a loaded machine's
      // client retries (2 s each) from failing the test; the 5 s acceptance bound is the test above.
      await waitFor(() => carries(daily.socks, httpPort, BODY, 2000), {
        timeoutMs: 15_000,
        what: "the reset user's client to carry again",
      });
      t.deps.logger.info({ readmittedAfterMs: Date.now() - resetAt }, "reset re-admission");

      // on-hold: the clock starts at the first traffic...
      clock = new Date();
      const held = await provisioned("held", { status: "on_hold", on_hold_duration_seconds: 3600 });
      const before = Date.now();
      await waitFor(
        async () => {
          await t.deps.services.traffic.collect(held.serverId);
          return (await userOf(held.userId)).status === "active";
        },
        { what: "the on-hold user's first traffic to start their clock" },
      );
      const started = await userOf(held.userId);
      const expireMs = Date.parse(started.expire_at ?? "");
      assert.ok(
        expireMs >= before + 3_600_000 - 1000 && expireMs <= Date.now() + 3_600_000,
        `expire_at ${started.expire_at} is an hour after the first traffic`,
      );
      // ...or at the timeout, whichever is first
      const timed = await request(t, "POST", "/api/users", {
        name: "held until timeout",
        status: "on_hold",
        on_hold_duration_seconds: 600,
        on_hold_timeout_at: later(3_600_000).toISOString(),
      });
      const timedId = (timed.json() as { id: string }).id;
      await lifecycle.tick();
      assert.equal((await userOf(timedId)).status, "on_hold");
      clock = later(2 * 3_600_000);
      await lifecycle.tick();
      const timedOut = await userOf(timedId);
      assert.deepEqual(
        [timedOut.status, timedOut.expire_at],
        ["active", new Date(clock.getTime() + 600_000).toISOString()],
      );
      assert.ok(core.isAlive());
    } finally {
      await jobs.stop();
    }
  });
});
