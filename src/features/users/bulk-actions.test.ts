// POST /api/users/bulk-actions (issue 12 item 6): each action over ids and over a filter, the counts
// it answers, the status it leaves (judged like an admin's write), userStatusChanged with exactly the
// ids whose status changed, validation, the audit entry, and which roles may run which action.
// Both dialects (DATABASE_URL).
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import type { Role } from "../../lib/roles.ts";
import { UserBulkActions } from "./bulk-actions.service.ts";
import { UserFiltersRepository } from "./user-filters.repository.ts";

let t: TestApp;
const tokens = new Map<Role, string>();
const DAY = 86_400_000;
const inDays = (n: number) => new Date(Date.now() + n * DAY).toISOString();

type U = {
  id: string;
  name: string;
  status: string;
  used_bytes: number;
  data_limit_bytes: number | null;
  expire_at: string | null;
  last_reset_at: string | null;
};

before(async () => {
  t = await createTestApp();
  for (const role of ["operator", "support", "viewer"] as const) {
    const made = await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: `bulk-${role}`, password: `bulk-${role}-password`, role },
    });
    assert.equal(made.statusCode, 201, made.body);
    const signed = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: `bulk-${role}`, password: `bulk-${role}-password` },
    });
    tokens.set(role, signed.json().access_token);
  }
});
after(async () => {
  await t.close();
});

/** Every test starts from no users: counts of filter actions are then exact. */
beforeEach(async () => {
  await t.deps.database.db.deleteFrom("users").execute();
});

function bulk(body: unknown, role?: Role) {
  const headers = role === undefined ? t.auth : { authorization: `Bearer ${tokens.get(role)}` };
  return t.app.inject({ method: "POST", url: "/api/users/bulk-actions", headers, payload: body as object });
}

async function ok(body: unknown, role?: Role) {
  const res = await bulk(body, role);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { action: string; matched: number; changed: number; status_changed: number };
}

async function create(name: string, body: Record<string, unknown> = {}, usedBytes = 0): Promise<U> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/users",
    headers: t.auth,
    payload: { name, ...body },
  });
  assert.equal(res.statusCode, 201, res.body);
  const id = res.json().id as string;
  if (usedBytes > 0) {
    await t.deps.database.db
      .updateTable("users")
      .set({ used_bytes: usedBytes })
      .where("id", "=", id)
      .execute();
    // An admin's write judges the status again from the numbers.
    await t.app.inject({
      method: "PUT",
      url: `/api/users/${id}`,
      headers: t.auth,
      payload: { data_limit_bytes: body.data_limit_bytes ?? null },
    });
  }
  return user(id);
}

async function user(id: string): Promise<U> {
  const res = await t.app.inject({ method: "GET", url: `/api/users/${id}`, headers: t.auth });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

describe("extend_expiry", () => {
  test("by ids: dated users move by N days (an expired one from now, active again); never-expiring ones stay", async () => {
    const later = await create("later", { expire_at: inDays(10) });
    const gone = await create("gone", { expire_at: inDays(-3) });
    const never = await create("never");
    const off = await create("off", { status: "disabled", expire_at: inDays(-1) });
    assert.equal(gone.status, "expired");
    const result = await ok({
      action: { type: "extend_expiry", days: 30 },
      ids: [later.id, gone.id, never.id, off.id, "00000000-0000-4000-8000-000000000000"],
    });
    assert.deepEqual(result, { action: "extend_expiry", matched: 4, changed: 3, status_changed: 1 });
    const movedLater = await user(later.id);
    assert.equal(
      Date.parse(movedLater.expire_at as string) - Date.parse(later.expire_at as string),
      30 * DAY,
    );
    const revived = await user(gone.id);
    assert.equal(revived.status, "active");
    const fromNow = Date.parse(revived.expire_at as string) - Date.now();
    assert.ok(fromNow > 29.9 * DAY && fromNow <= 30 * DAY, String(fromNow));
    assert.equal((await user(never.id)).expire_at, null);
    // Disabled stays disabled, its date moves all the same.
    const stillOff = await user(off.id);
    assert.equal(stillOff.status, "disabled");
    assert.ok(Date.parse(stillOff.expire_at as string) > Date.now() + 29 * DAY);
  });

  test("by filter: only the users the filter selects", async () => {
    const soon = await create("soon", { expire_at: inDays(2) });
    const far = await create("far", { expire_at: inDays(200) });
    const result = await ok({
      action: { type: "extend_expiry", days: 7 },
      filter: { expires_before: inDays(5) },
    });
    assert.deepEqual(result, { action: "extend_expiry", matched: 1, changed: 1, status_changed: 0 });
    assert.equal(
      Date.parse((await user(soon.id)).expire_at as string) - Date.parse(soon.expire_at as string),
      7 * DAY,
    );
    assert.equal((await user(far.id)).expire_at, far.expire_at);
  });
});

describe("add_data_limit, reset_usage, set_status", () => {
  test("add_data_limit over the limited users: re-admitted when the new limit is above their usage; unlimited stays unlimited", async () => {
    const over = await create("over", { data_limit_bytes: 1000 }, 1500);
    const farOver = await create("far-over", { data_limit_bytes: 1000 }, 5000);
    const free = await create("free", {}, 5000);
    assert.equal(over.status, "limited");
    assert.equal(farOver.status, "limited");
    const result = await ok({
      action: { type: "add_data_limit", bytes: 1000 },
      filter: { status: ["limited"] },
    });
    assert.deepEqual(result, { action: "add_data_limit", matched: 2, changed: 2, status_changed: 1 });
    const raised = await user(over.id);
    assert.equal(raised.data_limit_bytes, 2000);
    assert.equal(raised.status, "active");
    const still = await user(farOver.id);
    assert.equal(still.data_limit_bytes, 2000);
    assert.equal(still.status, "limited");
    const byIds = await ok({ action: { type: "add_data_limit", bytes: 10 }, ids: [free.id] });
    assert.deepEqual(byIds, { action: "add_data_limit", matched: 1, changed: 0, status_changed: 0 });
    assert.equal((await user(free.id)).data_limit_bytes, null);
  });

  test("reset_usage: used_bytes 0 and last_reset_at now; a limited user active again, a disabled one stays disabled", async () => {
    const limited = await create("limited", { data_limit_bytes: 100 }, 100);
    const off = await create("off", { status: "disabled", data_limit_bytes: 100 }, 500);
    const before = Date.now();
    const result = await ok({ action: { type: "reset_usage" }, filter: { used_over_percent: 100 } });
    assert.deepEqual(result, { action: "reset_usage", matched: 2, changed: 2, status_changed: 1 });
    const reset = await user(limited.id);
    assert.equal(reset.used_bytes, 0);
    assert.equal(reset.status, "active");
    assert.ok(Date.parse(reset.last_reset_at as string) >= before - 1000);
    const stillOff = await user(off.id);
    assert.equal(stillOff.used_bytes, 0);
    assert.equal(stillOff.status, "disabled");
  });

  test("set_status: disabled, then active judged from the numbers (over the limit → limited, past expiry → expired)", async () => {
    const fine = await create("fine");
    const heavy = await create("heavy", { data_limit_bytes: 10 }, 50);
    const old = await create("old", { expire_at: inDays(-2) });
    const ids = [fine.id, heavy.id, old.id];
    const off = await ok({ action: { type: "set_status", status: "disabled" }, ids });
    assert.deepEqual(off, { action: "set_status", matched: 3, changed: 3, status_changed: 3 });
    for (const id of ids) assert.equal((await user(id)).status, "disabled");
    const again = await ok({ action: { type: "set_status", status: "disabled" }, ids });
    assert.deepEqual(again, { action: "set_status", matched: 3, changed: 0, status_changed: 0 });
    const on = await ok({
      action: { type: "set_status", status: "active" },
      filter: { status: ["disabled"] },
    });
    assert.deepEqual(on, { action: "set_status", matched: 3, changed: 3, status_changed: 3 });
    assert.equal((await user(fine.id)).status, "active");
    assert.equal((await user(heavy.id)).status, "limited");
    assert.equal((await user(old.id)).status, "expired");
  });

  test("userStatusChanged carries exactly the ids whose status changed, once per chunk", async () => {
    const users = [];
    for (let i = 0; i < 6; i++)
      users.push(await create(`chunk-${i}`, { data_limit_bytes: 10 }, i < 3 ? 10 : 5));
    const emitted: string[][] = [];
    const service = new UserBulkActions(
      new UserFiltersRepository(t.deps.database.db, t.deps.database.dialect),
      { revokeUser: async () => {} },
      {
        emit: async (_name: string, ids: readonly string[]) => {
          emitted.push([...ids]);
        },
      } as never,
    );
    const result = await service.run(
      { action: { type: "reset_usage" }, ids: users.map((u) => u.id) },
      "operator",
    );
    assert.equal(result.status_changed, 3);
    assert.equal(emitted.length, 1);
    assert.deepEqual(
      emitted[0]?.sort(),
      users
        .slice(0, 3)
        .map((u) => u.id)
        .sort(),
    );
    const none = await service.run(
      { action: { type: "reset_usage" }, ids: users.map((u) => u.id) },
      "operator",
    );
    assert.equal(none.status_changed, 0);
    assert.equal(emitted.length, 1, "nothing emitted when no status changed");
  });
});

describe("chunks", () => {
  test("a filter over more users than one statement takes: every one changed once, one event per chunk", async () => {
    const n = 10_050;
    const stamp = new Date().toISOString();
    for (let i = 0; i < n; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
        id: `00000000-0000-4000-8000-${String(i + k).padStart(12, "0")}`,
        name: `many-${i + k}`,
        comment: null,
        telegram_id: null,
        created_at: stamp,
        updated_at: stamp,
        status: "limited" as const,
        data_limit_bytes: 10,
        used_bytes: 10,
      }));
      await t.deps.database.db.insertInto("users").values(rows).execute();
    }
    const emitted: number[] = [];
    const service = new UserBulkActions(
      new UserFiltersRepository(t.deps.database.db, t.deps.database.dialect),
      { revokeUser: async () => {} },
      {
        emit: async (_name: string, ids: readonly string[]) => {
          emitted.push(ids.length);
        },
      } as never,
    );
    const result = await service.run(
      { action: { type: "reset_usage" }, filter: { status: ["limited"] } },
      "owner",
    );
    assert.deepEqual(result, { action: "reset_usage", matched: n, changed: n, status_changed: n });
    assert.deepEqual(emitted, [5000, 5000, 50]);
    const left = await t.app.inject({ method: "GET", url: "/api/users?status=limited", headers: t.auth });
    assert.equal(left.json().total, 0);
  });
});

describe("delete_expired", () => {
  test("deletes the selected users expired for more than N days, keeps the recently expired and the rest", async () => {
    const long = await create("long", { expire_at: inDays(-40) });
    const longer = await create("longer", { status: "disabled", expire_at: inDays(-400) });
    const recent = await create("recent", { expire_at: inDays(-2) });
    const alive = await create("alive", { expire_at: inDays(5) });
    const never = await create("never");
    const result = await ok({
      action: { type: "delete_expired", expired_for_days: 30 },
      filter: { expires_before: inDays(0) },
    });
    assert.deepEqual(result, { action: "delete_expired", matched: 3, changed: 2, status_changed: 0 });
    for (const id of [long.id, longer.id]) {
      assert.equal(
        (await t.app.inject({ method: "GET", url: `/api/users/${id}`, headers: t.auth })).statusCode,
        404,
      );
    }
    for (const id of [recent.id, alive.id, never.id]) assert.equal((await user(id)).id, id);
    const list = (await t.app.inject({ method: "GET", url: "/api/users", headers: t.auth })).json();
    assert.equal(list.total, 3, "the row counter follows a bulk delete");
    const byIds = await ok({
      action: { type: "delete_expired", expired_for_days: 0 },
      ids: [recent.id, alive.id],
    });
    assert.deepEqual(byIds, { action: "delete_expired", matched: 2, changed: 1, status_changed: 0 });
  });
});

describe("validation, permissions, audit", () => {
  test("bad requests are 400 problems naming the field; nothing changes", async () => {
    const u = await create("v", { data_limit_bytes: 5 });
    const tooMany = Array.from(
      { length: 10_001 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    );
    const cases: [unknown, string][] = [
      [{ action: { type: "reset_usage" } }, "body"],
      [{ action: { type: "reset_usage" }, ids: [u.id], filter: { status: ["active"] } }, "body.filter"],
      [{ action: { type: "reset_usage" }, filter: {} }, "body.filter"],
      [{ action: { type: "reset_usage" }, ids: [] }, "body.ids"],
      [{ action: { type: "reset_usage" }, ids: tooMany }, "body.ids"],
      [{ action: { type: "reset_usage" }, ids: ["not-a-uuid"] }, "body.ids"],
      [{ action: { type: "everything" }, ids: [u.id] }, "body.action"],
      [{ action: { type: "extend_expiry" }, ids: [u.id] }, "body.action"],
      [{ action: { type: "extend_expiry", days: 0 }, ids: [u.id] }, "body.action"],
      [{ action: { type: "add_data_limit", bytes: -1 }, ids: [u.id] }, "body.action"],
      [{ action: { type: "set_status", status: "limited" }, ids: [u.id] }, "body.action"],
      [{ action: { type: "delete_expired" }, filter: { status: ["expired"] } }, "body.action"],
      [{ action: { type: "reset_usage" }, filter: { status: "active" } }, "body.filter"],
      [{ action: { type: "reset_usage" }, filter: { used_over_percent: 1001 } }, "body.filter"],
      [{ action: { type: "reset_usage" }, filter: { everyone: true } }, "body.filter"],
      [{ ids: [u.id] }, "body"],
    ];
    for (const [body, path] of cases) {
      const res = await bulk(body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 120)}: ${res.body}`);
      assert.match(res.headers["content-type"] as string, /problem\+json/);
      assert.ok(
        (res.json().errors ?? []).some((e: { path: string }) => e.path.startsWith(path)),
        `${JSON.stringify(body).slice(0, 120)}: ${res.body}`,
      );
    }
    assert.equal((await user(u.id)).data_limit_bytes, 5);
  });

  test("support may extend expiry and reset usage only; viewer nothing; operator everything", async () => {
    const u = await create("perm", { data_limit_bytes: 100, expire_at: inDays(1) });
    const ids = [u.id];
    const actions = [
      { type: "extend_expiry", days: 1 },
      { type: "reset_usage" },
      { type: "add_data_limit", bytes: 1 },
      { type: "set_status", status: "disabled" },
      { type: "delete_expired", expired_for_days: 1 },
    ];
    const allowed: Record<string, string[]> = {
      operator: actions.map((a) => a.type),
      support: ["extend_expiry", "reset_usage"],
      viewer: [],
    };
    for (const role of ["operator", "support", "viewer"] as const) {
      for (const action of actions) {
        const res = await bulk({ action, ids }, role);
        const label = `${role} ${action.type}: ${res.body}`;
        if (allowed[role]?.includes(action.type)) assert.equal(res.statusCode, 200, label);
        else {
          assert.equal(res.statusCode, 403, label);
          assert.equal(res.json().code, "forbidden", label);
        }
      }
    }
    // Refused actions changed nothing: the limit is as created.
    assert.equal((await user(u.id)).data_limit_bytes, 101);
  });

  test("the audit log names the action, how the users were selected and the counts", async () => {
    await create("audited", { data_limit_bytes: 10 }, 20);
    await ok({ action: { type: "reset_usage" }, filter: { status: ["limited"] } });
    const res = await t.app.inject({
      method: "GET",
      url: "/api/audit?action=users.bulk_action",
      headers: t.auth,
    });
    assert.equal(res.statusCode, 200, res.body);
    const entry = res.json().items[0];
    assert.equal(entry.outcome, "succeeded");
    assert.deepEqual(entry.targets, {
      bulk_action: "reset_usage",
      selected_by: "filter",
      matched: "1",
      changed: "1",
    });
    assert.deepEqual(entry.fields.sort(), ["action", "filter"]);
  });
});
