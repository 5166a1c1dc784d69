// Plans on whichever dialect DATABASE_URL selects: CRUD and its refusals, a user created from a plan,
// a renewal, and the next plan the lifecycle job applies once to a limited or expired user (one
// event and one audit entry, even with ticks of two instances racing). The real-core acceptance is
// next-plan-core.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { run as runCli } from "../../cli/plans.ts";

const DAY_MS = 86_400_000;
const GIB = 1024 ** 3;
let t: TestApp;
const tokens = new Map<string, string>();

before(async () => {
  t = await createTestApp();
  for (const role of ["support", "viewer"] as const) {
    const password = `plans-${role}-password`;
    const made = await request(t, "POST", "/api/admins", { username: `plans-${role}`, password, role });
    assert.equal(made.statusCode, 201, made.body);
    const signed = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: `plans-${role}`, password },
    });
    tokens.set(role, signed.json().access_token);
  }
});
after(async () => {
  await t.close();
});

const as = (role: string, method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object) =>
  t.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${tokens.get(role)}` },
    ...(payload === undefined ? {} : { payload }),
  });

async function newPlan(body: Record<string, unknown>) {
  const res = await request(t, "POST", "/api/plans", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; name: string; group_ids: string[] };
}

async function newUser(body: Record<string, unknown>) {
  const res = await request(t, "POST", "/api/users", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as Record<string, unknown> & { id: string };
}

async function userOf(id: string) {
  const res = await request(t, "GET", `/api/users/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Record<string, unknown> & { id: string };
}

async function setUsed(id: string, usedBytes: number) {
  await t.deps.database.db.updateTable("users").set({ used_bytes: usedBytes }).where("id", "=", id).execute();
}

/** Within `ms` of now + days (the request's clock and the test's differ by the request's time). */
function assertDaysAhead(value: unknown, days: number, from = Date.now()) {
  assert.equal(typeof value, "string");
  const diff = Date.parse(value as string) - (from + days * DAY_MS);
  assert.ok(
    Math.abs(diff) < 60_000,
    `${String(value)} is not ${days} days after ${new Date(from).toISOString()}`,
  );
}

describe("plans", () => {
  test("a plan is created, read, changed and deleted; refusals are problems, not 500s", async () => {
    const group = await request(t, "POST", "/api/groups", { name: "crud group" });
    assert.equal(group.statusCode, 201, group.body);
    const plan = await newPlan({
      name: "  Monthly 50 GiB  ",
      data_limit_bytes: 50 * GIB,
      data_limit_reset: "month",
      duration_days: 30,
      ip_limit: 3,
      group_ids: [group.json().id],
    });
    const got = (await request(t, "GET", `/api/plans/${plan.id}`)).json();
    assert.equal(got.name, "Monthly 50 GiB");
    assert.deepEqual(
      {
        limit: got.data_limit_bytes,
        reset: got.data_limit_reset,
        days: got.duration_days,
        hold: got.start_on_hold,
        ip: got.ip_limit,
        from: got.renew_from,
        usage: got.reset_usage,
        groups: got.group_ids,
      },
      {
        limit: 50 * GIB,
        reset: "month",
        days: 30,
        hold: false,
        ip: 3,
        from: "expiry",
        usage: false,
        groups: [group.json().id],
      },
    );
    expectProblem(await request(t, "POST", "/api/plans", { name: "Monthly 50 GiB" }), 409, "plan_name_taken");
    const onHold = expectProblem(
      await request(t, "POST", "/api/plans", { name: "hold", start_on_hold: true }),
      400,
      "validation_failed",
    );
    assert.equal(onHold[0]?.path, "body.duration_days");
    const unknownGroup = expectProblem(
      await request(t, "POST", "/api/plans", { name: "ghost", group_ids: [crypto.randomUUID()] }),
      400,
      "validation_failed",
    );
    assert.equal(unknownGroup[0]?.path, "body.group_ids.0");
    expectProblem(
      await request(t, "POST", "/api/plans", { name: "line\u2028break" }),
      400,
      "validation_failed",
    );
    const changed = await request(t, "PUT", `/api/plans/${plan.id}`, {
      renew_from: "now",
      reset_usage: true,
      group_ids: [],
    });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.deepEqual([changed.json().renew_from, changed.json().reset_usage], ["now", true]);
    assert.deepEqual(changed.json().group_ids, []);
    assert.equal(changed.json().data_limit_bytes, 50 * GIB, "fields not given stay");
    const list = (await request(t, "GET", "/api/plans")).json() as { id: string }[];
    assert.ok(list.some((p) => p.id === plan.id));
    assert.equal((await request(t, "DELETE", `/api/plans/${plan.id}`)).statusCode, 204);
    expectProblem(await request(t, "GET", `/api/plans/${plan.id}`), 404, "not_found");
  });

  test("a user created from a plan gets its limit, period, expiry, IP and device limits and groups; the plan's fields are not taken from the body", async () => {
    const group = (await request(t, "POST", "/api/groups", { name: "plan members" })).json();
    const plan = await newPlan({
      name: "starter",
      data_limit_bytes: 10 * GIB,
      data_limit_reset: "week",
      duration_days: 7,
      ip_limit: 2,
      device_limit: 3,
      group_ids: [group.id],
    });
    assert.equal((plan as Record<string, unknown>).device_limit, 3);
    const user = await newUser({ name: "from plan", comment: "kept", plan_id: plan.id });
    assert.deepEqual(
      [
        user.status,
        user.data_limit_bytes,
        user.data_limit_reset,
        user.ip_limit,
        user.device_limit,
        user.comment,
      ],
      ["active", 10 * GIB, "week", 2, 3, "kept"],
    );
    assertDaysAhead(user.expire_at, 7);
    assert.deepEqual(user.group_ids, [group.id]);
    const both = expectProblem(
      await request(t, "POST", "/api/users", {
        name: "both",
        plan_id: plan.id,
        data_limit_bytes: 1,
        expire_at: null,
        device_limit: 9,
        group_ids: [],
      }),
      400,
      "validation_failed",
    );
    assert.deepEqual(
      both.map((e) => e.path),
      ["body.data_limit_bytes", "body.expire_at", "body.device_limit", "body.group_ids"],
    );
    const unknown = expectProblem(
      await request(t, "POST", "/api/users", { name: "ghost", plan_id: crypto.randomUUID() }),
      400,
      "validation_failed",
    );
    assert.equal(unknown[0]?.path, "body.plan_id");
    const names = (await request(t, "GET", "/api/users/search?q=both")).json() as unknown[];
    assert.equal(names.length, 0, "nothing was created by the refused requests");
  });

  test("a plan that starts on hold makes an on_hold user whose days count from the first traffic", async () => {
    const plan = await newPlan({
      name: "trial",
      duration_days: 3,
      start_on_hold: true,
      on_hold_timeout_days: 10,
    });
    const user = await newUser({ name: "trial user", plan_id: plan.id });
    assert.equal(user.status, "on_hold");
    assert.equal(user.expire_at, null);
    assert.equal(user.on_hold_duration_seconds, 3 * 86_400);
    assertDaysAhead(user.on_hold_timeout_at, 10);
  });

  test("a renewal counts from the current expiry or from now as the plan says, and resets usage or keeps it", async () => {
    const inTenDays = new Date(Date.now() + 10 * DAY_MS).toISOString();
    const fromExpiry = await newPlan({
      name: "extend 30",
      duration_days: 30,
      data_limit_bytes: 5 * GIB,
      device_limit: 4,
    });
    const fromNow = await newPlan({
      name: "fresh 30",
      duration_days: 30,
      renew_from: "now",
      reset_usage: true,
    });
    const a = await newUser({
      name: "renew a",
      expire_at: inTenDays,
      data_limit_bytes: GIB,
      device_limit: 1,
    });
    const b = await newUser({ name: "renew b", expire_at: inTenDays, data_limit_bytes: GIB });
    await setUsed(a.id, GIB);
    await setUsed(b.id, GIB);
    const renewedA = await request(t, "POST", `/api/users/${a.id}/renew`, { plan_id: fromExpiry.id });
    assert.equal(renewedA.statusCode, 200, renewedA.body);
    assertDaysAhead(renewedA.json().expire_at, 30, Date.parse(inTenDays));
    assert.deepEqual(
      [
        renewedA.json().used_bytes,
        renewedA.json().data_limit_bytes,
        renewedA.json().device_limit,
        renewedA.json().status,
      ],
      [GIB, 5 * GIB, 4, "active"],
    );
    const renewedB = (await request(t, "POST", `/api/users/${b.id}/renew`, { plan_id: fromNow.id })).json();
    assertDaysAhead(renewedB.expire_at, 30);
    assert.deepEqual([renewedB.used_bytes, renewedB.data_limit_bytes], [0, null]);
    // An expired user: the expiry has passed, so even renew_from expiry counts from now.
    const c = await newUser({ name: "renew c", expire_at: new Date(Date.now() - DAY_MS).toISOString() });
    assert.equal(c.status, "expired");
    const renewedC = (
      await request(t, "POST", `/api/users/${c.id}/renew`, { plan_id: fromExpiry.id })
    ).json();
    assert.equal(renewedC.status, "active");
    assertDaysAhead(renewedC.expire_at, 30);
    expectProblem(
      await request(t, "POST", `/api/users/${crypto.randomUUID()}/renew`, { plan_id: fromNow.id }),
      404,
      "not_found",
    );
    const noPlan = expectProblem(
      await request(t, "POST", `/api/users/${c.id}/renew`, { plan_id: crypto.randomUUID() }),
      400,
      "validation_failed",
    );
    assert.equal(noPlan[0]?.path, "body.plan_id");
  });

  test("a limited user with a next plan moves to it once: one event and one audit entry, with ticks of two instances racing", async () => {
    const hook = await request(t, "POST", "/api/webhooks", {
      name: "plans",
      url: "http://127.0.0.1:9/hook",
      events: ["user.plan_applied"],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const group = (await request(t, "POST", "/api/groups", { name: "next plan group" })).json();
    const next = await newPlan({
      name: "next 20 GiB",
      data_limit_bytes: 20 * GIB,
      duration_days: 30,
      reset_usage: true,
      group_ids: [group.id],
    });
    const user = await newUser({ name: "runs out", data_limit_bytes: GIB, next_plan_id: next.id });
    assert.equal(user.next_plan_id, next.id);
    const other = await createTestApp({}, { sameDatabaseAs: t });
    try {
      // Where the lifecycle's limit step leaves the user; then the next-plan step of both instances
      // races itself and a whole tick (two instances' whole ticks only on PostgreSQL: SQLite has one
      // writer, and a second instance's tick transaction is refused as busy).
      await t.deps.database.db
        .updateTable("users")
        .set({ used_bytes: GIB + 1, status: "limited" })
        .where("id", "=", user.id)
        .execute();
      const racers: Promise<unknown>[] = [t, other, t, other].map((app) =>
        app.deps.services.plans.applyDueNextPlans(),
      );
      racers.push(t.deps.services.lifecycle.tick());
      if (t.deps.database.dialect === "postgres") racers.push(other.deps.services.lifecycle.tick());
      await Promise.all(racers);
      await t.deps.services.lifecycle.tick();
    } finally {
      await other.close();
    }
    const moved = await userOf(user.id);
    assert.deepEqual(
      [moved.status, moved.used_bytes, moved.data_limit_bytes, moved.next_plan_id],
      ["active", 0, 20 * GIB, null],
    );
    assertDaysAhead(moved.expire_at, 30);
    assert.deepEqual(moved.group_ids, [group.id]);
    const events = await t.deps.database.db
      .selectFrom("notification_events")
      .select("payload")
      .where("type", "=", "user.plan_applied")
      .execute();
    const mine = events
      .map((row) => JSON.parse(row.payload))
      .filter((event) => event.data.user.id === user.id);
    assert.equal(mine.length, 1, "the event fires once");
    assert.deepEqual(
      [mine[0].data.plan.id, mine[0].data.previous_status, mine[0].data.via, mine[0].data.user.status],
      [next.id, "limited", "next_plan", "active"],
    );
    assert.equal("subscription_url" in mine[0].data.user, false, "no credential in the payload");
    const audit = (await request(t, "GET", "/api/audit?action=users.next_plan_applied")).json();
    const entries = (audit.items as { targets: Record<string, string> }[]).filter(
      (entry) => entry.targets.user_id === user.id,
    );
    assert.equal(entries.length, 1, "one audit entry");
    // Used up again: without a next plan it stays limited.
    await setUsed(user.id, 20 * GIB);
    await t.deps.services.lifecycle.tick();
    assert.equal((await userOf(user.id)).status, "limited");
  });

  test("an expired user with a next plan gets it; a deleted plan clears next_plan_id; an unknown one is 400", async () => {
    const next = await newPlan({ name: "after expiry", duration_days: 5 });
    const user = await newUser({
      name: "expires",
      expire_at: new Date(Date.now() + 60_000).toISOString(),
      next_plan_id: next.id,
    });
    await t.deps.database.db
      .updateTable("users")
      .set({ expire_at: new Date(Date.now() - 1000).toISOString() })
      .where("id", "=", user.id)
      .execute();
    await t.deps.services.lifecycle.tick();
    const moved = await userOf(user.id);
    assert.deepEqual([moved.status, moved.next_plan_id], ["active", null]);
    assertDaysAhead(moved.expire_at, 5);
    const gone = await newPlan({ name: "to be deleted" });
    const holder = await newUser({ name: "holder", next_plan_id: gone.id });
    assert.equal((await request(t, "DELETE", `/api/plans/${gone.id}`)).statusCode, 204);
    assert.equal((await userOf(holder.id)).next_plan_id, null);
    const unknown = expectProblem(
      await request(t, "PUT", `/api/users/${holder.id}`, { next_plan_id: crypto.randomUUID() }),
      400,
      "validation_failed",
    );
    assert.equal(unknown[0]?.path, "body.next_plan_id");
    const cleared = await request(t, "PUT", `/api/users/${holder.id}`, { next_plan_id: null });
    assert.equal(cleared.statusCode, 200, cleared.body);
  });

  test("viewers and support read plans but change none; support may not renew", async () => {
    const plan = await newPlan({ name: "roles" });
    const user = await newUser({ name: "roles user" });
    for (const role of ["viewer", "support"]) {
      assert.equal((await as(role, "GET", "/api/plans")).statusCode, 200);
      expectProblem(await as(role, "POST", "/api/plans", { name: `by ${role}` }), 403, "forbidden");
      expectProblem(await as(role, "PUT", `/api/plans/${plan.id}`, { name: "x" }), 403, "forbidden");
      expectProblem(await as(role, "DELETE", `/api/plans/${plan.id}`), 403, "forbidden");
      expectProblem(
        await as(role, "POST", `/api/users/${user.id}/renew`, { plan_id: plan.id }),
        403,
        "forbidden",
      );
    }
  });

  test("the CLI creates and lists plans through the same schema: a bad value names its field", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const cli = (args: string[]) =>
      runCli(args, { deps: t.deps, write: (text) => out.push(text), writeError: (text) => err.push(text) });
    const made = await cli([
      "create",
      "cli monthly",
      "--data-limit-gib",
      "1.5",
      "--reset",
      "month",
      "--days",
      "30",
      "--reset-usage",
    ]);
    assert.equal(made, 0, err.join(""));
    const plan = (await t.deps.services.plans.list()).find((p) => p.name === "cli monthly");
    assert.deepEqual(
      [plan?.data_limit_bytes, plan?.data_limit_reset, plan?.duration_days, plan?.reset_usage],
      [Math.round(1.5 * GIB), "month", 30, true],
    );
    assert.equal(await cli(["list"]), 0);
    assert.ok(out.join("").includes(`cli monthly\t1.5 GiB\tmonth\t30\t0\t${plan?.id}`), out.join(""));
    assert.equal(await cli(["create", "cli bad", "--days", "soon"]), 1);
    assert.match(err.join(""), /duration_days/);
    assert.equal(await cli(["create"]), 2, "a missing name is a usage error");
  });
});
