// The next plan on a real V2Ray core with a real v2ray client, on whichever dialect DATABASE_URL
// selects (issue 49's acceptance): a limited user with a next plan moves to it once, is re-admitted
// on the core (the same client carries again) and user.plan_applied fires once, while the lifecycle
// job ticks every 250 ms and the test races more ticks and next-plan steps against it.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { grantsOf, probeCore, startConvergence } from "../../../test/support/convergence.ts";
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

const needs = requires("v2ray");
const MIB = 1024 * 1024;
const BODY = randomBytes(MIB);
const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let inboundId: string;
let httpPort: number;
let jobs: RunningJobs | undefined;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  core = await startV2rayServer(stack.add);
  httpPort = await startHttpServer(stack.add, BODY);
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  serverId = (await registerServer(t, core.apiPort, { name: "next plan core" })).id;
  inboundId = (await createInbound(t, serverId, { template_id: template.id, port: await freePort() })).id;
  const hook = await request(t, "POST", "/api/webhooks", {
    name: "plans",
    url: "http://127.0.0.1:9/hook",
    events: ["user.plan_applied"],
  });
  assert.equal(hook.statusCode, 201, hook.body);
});
needs.after(async () => {
  const results = await Promise.allSettled([jobs?.stop()]);
  results.push(...(await Promise.allSettled([t?.close()])));
  results.push(...(await Promise.allSettled([stack.run()])));
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length > 0)
    throw new AggregateError(
      failed.map((r) => r.reason),
      "cleanup failed",
    );
});

type UserBody = {
  id: string;
  status: string;
  used_bytes: number;
  data_limit_bytes: number | null;
  next_plan_id: string | null;
};

async function userOf(id: string): Promise<UserBody> {
  const res = await request(t, "GET", `/api/users/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as UserBody;
}

/** A user granted on the core's inbound and a v2ray client that carries through it. */
async function provisioned(name: string, fields: Record<string, unknown>) {
  const created = await request(t, "POST", "/api/users", { name, ...fields });
  assert.equal(created.statusCode, 201, created.body);
  const userId = (created.json() as { id: string }).id;
  const access = await grant(t, serverId, inboundId, { user_id: userId });
  assert.equal(access.sync_state, "synced");
  const [link] = await subscriptionLinks(t, userId);
  assert.ok(link !== undefined);
  const socks = await startClient(stack.add, "v2ray", decodeLink(link));
  await expectCarries(socks, httpPort, BODY, `${name}'s client`);
  return { userId, socks, email: access.proxy_user_id };
}

/** Pulls up to `count` MiB through the client; stops when the core cuts the user off. */
async function pull(socks: number, count: number): Promise<number> {
  let pulled = 0;
  for (; pulled < count; pulled++) {
    const res = await fetchViaSocks(socks, { port: httpPort, path: "/" }, 10_000).catch(() => undefined);
    if (res?.body.length !== MIB) break;
  }
  return pulled;
}

/**
 * Whether the core holds the user now, asked through its own API. The probe adds a missing user and
 * removes it again, so it is asked only while nothing else is adding that user (not during a re-admission).
 */
async function onCore(email: string): Promise<boolean> {
  const grants = (await grantsOf(t.deps, serverId)).filter((g) => g.email === email);
  assert.equal(grants.length, 1, "the grant stays in the database");
  const { present } = await probeCore(`127.0.0.1:${core.apiPort}`, grants);
  return present.includes(email);
}

/** Races the lifecycle's steps against the running job: two ticks and two next-plan steps at once. */
async function race(): Promise<void> {
  const { lifecycle, plans } = t.deps.services;
  await Promise.all([
    lifecycle.tick(),
    plans.applyDueNextPlans(),
    plans.applyDueNextPlans(),
    lifecycle.tick(),
  ]);
}

async function planEvents(userId: string): Promise<{ data: { previous_status: string; via: string } }[]> {
  const rows = await t.deps.database.db
    .selectFrom("notification_events")
    .select("payload")
    .where("type", "=", "user.plan_applied")
    .execute();
  return rows.map((row) => JSON.parse(row.payload)).filter((event) => event.data.user.id === userId);
}

describe("the next plan on a real core", needs, () => {
  test("a limited user given a next plan moves to it once and is back on the core; the event fires once", async () => {
    jobs = startConvergence(t.deps, t.deps.logger, {
      reconcileMs: 2000,
      trafficMs: 1000,
      lifecycleMs: 250,
    }).running;
    const plan = await request(t, "POST", "/api/plans", {
      name: "refill 64 MiB",
      data_limit_bytes: 64 * MIB,
      duration_days: 30,
      reset_usage: true,
    });
    assert.equal(plan.statusCode, 201, plan.body);
    const planId = plan.json().id as string;

    // A: limited and cut off first, then given a next plan.
    const a = await provisioned("cut off first", { data_limit_bytes: 2 * MIB });
    await pull(a.socks, 3);
    await waitFor(async () => (await userOf(a.userId)).status === "limited", {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: "A to be limited",
    });
    await expectBlocked(a.socks, httpPort, BODY, "the limited user's client");
    await waitFor(async () => (await grantsOf(t.deps, serverId)).length > 0 && !(await onCore(a.email)), {
      timeoutMs: 15_000,
      what: "A to be off the core",
    });
    const set = await request(t, "PUT", `/api/users/${a.userId}`, { next_plan_id: planId });
    assert.equal(set.statusCode, 200, set.body);
    await Promise.all([race(), race(), race()]);
    const moved = await waitFor(
      async () => {
        const user = await userOf(a.userId);
        return user.status === "active" && user;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "A to be active on the plan" },
    );
    assert.deepEqual([moved.data_limit_bytes, moved.next_plan_id], [64 * MIB, null]);
    await waitFor(() => carries(a.socks, httpPort, BODY, 3000), {
      timeoutMs: 20_000,
      what: "A's same client to carry again",
    });
    assert.equal(await onCore(a.email), true, "the core holds A again");

    // B: the next plan set ahead; the limit reached while the job ticks.
    const b = await provisioned("planned ahead", { data_limit_bytes: 2 * MIB, next_plan_id: planId });
    await pull(b.socks, 3);
    await race();
    await waitFor(async () => (await userOf(b.userId)).next_plan_id === null, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: "B's next plan to be applied",
    });
    await waitFor(() => carries(b.socks, httpPort, BODY, 3000), {
      timeoutMs: 20_000,
      what: "B's client to carry on the plan",
    });
    assert.equal((await userOf(b.userId)).data_limit_bytes, 64 * MIB);

    // More ticks, racing: nothing more happens.
    await Promise.all([race(), race()]);
    for (const [who, user] of [
      ["A", a],
      ["B", b],
    ] as const) {
      const events = await planEvents(user.userId);
      assert.equal(events.length, 1, `${who}: user.plan_applied fires once`);
      assert.deepEqual([events[0]?.data.previous_status, events[0]?.data.via], ["limited", "next_plan"]);
    }
    const audit = (await request(t, "GET", "/api/audit?action=users.next_plan_applied&per_page=100")).json();
    const entries = (audit.items as { targets: Record<string, string> }[]).filter((entry) =>
      [a.userId, b.userId].includes(entry.targets.user_id ?? ""),
    );
    assert.equal(entries.length, 2, "one audit entry per user");
    assert.equal((await userOf(a.userId)).status, "active");
  });
});
