// The lifecycle fields on the user resource (issue 12 item 1): defaults, create and update, the status
// an admin's write leads to, validation, and that list, get and search show the same user.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

function api(method: "GET" | "POST" | "PUT", url: string, payload?: unknown) {
  return t.app.inject({
    method,
    url,
    headers: t.auth,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

async function create(body: Record<string, unknown>) {
  const res = await api("POST", "/api/users", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe("lifecycle fields", () => {
  test("a seed-shaped create gets an active, unlimited, never-expiring user with zero usage", async () => {
    const user = await create({ name: "plain" });
    assert.equal(user.status, "active");
    assert.equal(user.data_limit_bytes, null);
    assert.equal(user.data_limit_reset, "no_reset");
    assert.equal(user.used_bytes, 0);
    assert.equal(user.lifetime_used_bytes, 0);
    assert.equal(user.expire_at, null);
    for (const field of [
      "last_reset_at",
      "on_hold_duration_seconds",
      "on_hold_timeout_at",
      "online_at",
      "sub_updated_at",
      "sub_last_user_agent",
    ]) {
      assert.equal(user[field], null, field);
    }
  });

  test("limits and expiry are stored as given; expiry in UTC whatever offset was sent", async () => {
    const user = await create({
      name: "limited-later",
      data_limit_bytes: 5 * 2 ** 30,
      data_limit_reset: "month",
      expire_at: "2099-01-01T03:00:00+03:00",
    });
    assert.equal(user.status, "active");
    assert.equal(user.data_limit_bytes, 5 * 2 ** 30);
    assert.equal(user.data_limit_reset, "month");
    assert.equal(user.expire_at, "2099-01-01T00:00:00.000Z");
    const got = (await api("GET", `/api/users/${user.id}`)).json();
    assert.deepEqual(got, user);
    const listed = (await api("GET", "/api/users?per_page=500"))
      .json()
      .items.find((u: { id: string }) => u.id === user.id);
    assert.deepEqual(listed, user);
    const found = (await api("GET", "/api/users/search?q=limited-later")).json();
    assert.deepEqual(found, [user]);
    const short = (await api("GET", "/api/users/search?q=li"))
      .json()
      .find((u: { id: string }) => u.id === user.id);
    assert.deepEqual(short, user);
  });

  test("an expiry in the past makes the user expired at once; extending it makes them active again", async () => {
    const user = await create({ name: "past", expire_at: "2001-01-01T00:00:00Z" });
    assert.equal(user.status, "expired");
    const extended = await api("PUT", `/api/users/${user.id}`, { expire_at: "2099-01-01T00:00:00Z" });
    assert.equal(extended.json().status, "active");
    const disabled = await api("PUT", `/api/users/${user.id}`, { status: "disabled" });
    assert.equal(disabled.json().status, "disabled");
    // A new expiry does not re-enable a disabled user; only status does.
    const still = await api("PUT", `/api/users/${user.id}`, { expire_at: "2098-01-01T00:00:00Z" });
    assert.equal(still.json().status, "disabled");
    const back = await api("PUT", `/api/users/${user.id}`, { status: "active" });
    assert.equal(back.json().status, "active");
  });

  test("a zero limit is reached at once (limited); clearing it admits the user", async () => {
    const user = await create({ name: "zero", data_limit_bytes: 0 });
    assert.equal(user.status, "limited");
    const cleared = await api("PUT", `/api/users/${user.id}`, { data_limit_bytes: null });
    assert.equal(cleared.json().status, "active");
    assert.equal(cleared.json().data_limit_bytes, null);
  });

  test("on_hold needs a duration, keeps it, and never becomes active by an unrelated write", async () => {
    const refused = await api("POST", "/api/users", { name: "hold", status: "on_hold" });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().errors[0].path, "body.on_hold_duration_seconds");
    const held = await create({
      name: "hold",
      status: "on_hold",
      on_hold_duration_seconds: 86_400 * 30,
      on_hold_timeout_at: "2099-01-01T00:00:00Z",
    });
    assert.equal(held.status, "on_hold");
    assert.equal(held.on_hold_duration_seconds, 2_592_000);
    assert.equal(held.on_hold_timeout_at, "2099-01-01T00:00:00.000Z");
    const renamed = await api("PUT", `/api/users/${held.id}`, { comment: "waiting", data_limit_bytes: 10 });
    assert.equal(renamed.json().status, "on_hold");
    const cleared = await api("PUT", `/api/users/${held.id}`, { on_hold_duration_seconds: null });
    assert.equal(cleared.statusCode, 400);
  });

  test("status limited/expired and the counters cannot be written; bad values are 400 naming the field", async () => {
    const user = await create({ name: "fields" });
    const cases: [Record<string, unknown>, string][] = [
      [{ status: "limited" }, "body.status"],
      [{ status: "expired" }, "body.status"],
      [{ used_bytes: 0 }, "body"],
      [{ data_limit_bytes: -1 }, "body.data_limit_bytes"],
      [{ data_limit_bytes: 1.5 }, "body.data_limit_bytes"],
      [{ data_limit_reset: "hourly" }, "body.data_limit_reset"],
      [{ expire_at: "tomorrow" }, "body.expire_at"],
      [{ on_hold_duration_seconds: 0 }, "body.on_hold_duration_seconds"],
    ];
    for (const [body, path] of cases) {
      const res = await api("PUT", `/api/users/${user.id}`, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.ok(
        res.json().errors.some((e: { path: string }) => e.path.startsWith(path)),
        `${JSON.stringify(body)}: ${res.body}`,
      );
    }
  });

  test("a server's usage_coefficient defaults to 1 and can be set", async () => {
    const res = await api("POST", "/api/servers", { name: "coef", hostname: "127.0.0.1", grpc_port: 1 });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().usage_coefficient, 1);
    const set = await api("PUT", `/api/servers/${res.json().id}`, { usage_coefficient: 1.5 });
    assert.equal(set.json().usage_coefficient, 1.5);
    const bad = await api("PUT", `/api/servers/${res.json().id}`, { usage_coefficient: -1 });
    assert.equal(bad.statusCode, 400);
  });
});
