// Several admins with roles: every route for every role (allowed → not 403, forbidden → a 403
// problem), the team management rules (there is always an active owner; nobody locks themself out),
// and API keys narrowed to a role within their admin's.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUser } from "../../../test/support/factories.ts";
import { can, ROLES, type Role } from "../../lib/roles.ts";
import { routePermission } from "./permissions.ts";

let t: TestApp;
const tokens = new Map<Role, string>();
const ids = new Map<Role, string>();

async function signIn(username: string, password: string): Promise<string> {
  const res = await t.app.inject({ method: "POST", url: "/api/auth/token", payload: { username, password } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().access_token as string;
}

async function createAdmin(username: string, role: Role, password = `${username}-password`) {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/admins",
    headers: t.auth,
    payload: { username, password, role },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; role: Role };
}

before(async () => {
  t = await createTestApp();
  for (const role of ROLES) {
    const admin = await createAdmin(`role-${role}`, role);
    ids.set(role, admin.id);
    tokens.set(role, await signIn(`role-${role}`, `role-${role}-password`));
  }
});
after(async () => {
  await t.close();
});

const as = (role: Role) => ({ authorization: `Bearer ${tokens.get(role)}` });

describe("every route for every role", () => {
  test("allowed routes are never 403, forbidden ones always are, on both dialects", async () => {
    const routes = t.app.routeTable.filter((r) => !r.isPublic);
    // Logging out revokes the token the walk uses: last.
    routes.sort((a, b) => Number(a.url === "/api/auth/logout") - Number(b.url === "/api/auth/logout"));
    let checked = 0;
    for (const role of ROLES) {
      for (const route of routes) {
        const permission = routePermission(route.method, route.url);
        assert.ok(permission !== undefined, `${route.method} ${route.url}`);
        const url = route.url.replace(/:[a-z_]+/g, () => randomUUID());
        const res = await t.app.inject({
          method: route.method as "GET",
          url,
          headers: as(role),
          ...(["POST", "PUT"].includes(route.method) ? { payload: {} } : {}),
        });
        const label = `${role} ${route.method} ${route.url} → ${res.statusCode}`;
        if (can(role, permission)) {
          assert.notEqual(res.statusCode, 403, label);
          assert.notEqual(res.statusCode, 401, label);
        } else {
          assert.equal(res.statusCode, 403, label);
          if (route.method !== "HEAD") assert.equal(res.json().code, "forbidden", label);
        }
        checked++;
      }
      tokens.set(role, await signIn(`role-${role}`, `role-${role}-password`));
    }
    assert.ok(checked >= ROLES.length * 50, `${checked} checks`);
  });

  test("the bootstrap admin is an owner", async () => {
    const me = await t.app.inject({ url: "/api/auth/me", headers: t.auth });
    assert.equal(me.json().role, "owner");
    assert.equal(me.json().token_kind, "session");
  });

  test("an operator cannot create admins; a support admin cannot delete a user; a viewer cannot write", async () => {
    const byOperator = await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: as("operator"),
      payload: { username: "sneaky", password: "sneaky-password", role: "owner" },
    });
    assert.equal(byOperator.statusCode, 403);
    const user = await createUser(t);
    const bySupport = await t.app.inject({
      method: "DELETE",
      url: `/api/users/${user.id}`,
      headers: as("support"),
    });
    assert.equal(bySupport.statusCode, 403);
    assert.equal(
      (await t.app.inject({ url: `/api/users/${user.id}`, headers: as("support") })).statusCode,
      200,
    );
    const byViewer = await t.app.inject({
      method: "PUT",
      url: `/api/users/${user.id}`,
      headers: as("viewer"),
      payload: { name: "renamed" },
    });
    assert.equal(byViewer.statusCode, 403);
    assert.equal(
      (await t.app.inject({ url: `/api/users/${user.id}`, headers: t.auth })).json().name,
      user.name,
    );
  });

  test("a role change applies to the admin's existing session at once", async () => {
    const admin = await createAdmin("promoted", "viewer");
    const token = await signIn("promoted", "promoted-password");
    const headers = { authorization: `Bearer ${token}` };
    const write = () =>
      t.app.inject({ method: "POST", url: "/api/users", headers, payload: { name: "by-promoted" } });
    assert.equal((await write()).statusCode, 403);
    await t.app.inject({
      method: "PUT",
      url: `/api/admins/${admin.id}`,
      headers: t.auth,
      payload: { role: "operator" },
    });
    assert.equal((await write()).statusCode, 201);
  });
});

describe("managing the team", () => {
  // An app of its own: here the bootstrap admin starts as the only owner.
  let team: TestApp;
  before(async () => {
    team = await createTestApp();
  });
  after(async () => {
    await team.close();
  });
  const teamAdmin = async (username: string, role: Role) => {
    const res = await team.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: team.auth,
      payload: { username, password: `${username}-password`, role },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json() as { id: string };
  };
  const teamSignIn = async (username: string) =>
    (
      await team.app.inject({
        method: "POST",
        url: "/api/auth/token",
        payload: { username, password: `${username}-password` },
      })
    ).json().access_token as string;

  test("admins are listed without secrets; a duplicate username is 409", async () => {
    const list = await t.app.inject({ url: "/api/admins", headers: t.auth });
    assert.equal(list.statusCode, 200);
    assert.doesNotMatch(list.body, /scrypt|password|secret/i);
    const dup = await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: "role-viewer", password: "another-password", role: "viewer" },
    });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().code, "admin_username_taken");
  });

  test("a disabled admin's token stops working and they cannot sign in", async () => {
    const admin = await createAdmin("to-disable", "operator");
    const token = await signIn("to-disable", "to-disable-password");
    const res = await t.app.inject({
      method: "PUT",
      url: `/api/admins/${admin.id}`,
      headers: t.auth,
      payload: { is_disabled: true },
    });
    assert.equal(res.json().is_disabled, true);
    const after = await t.app.inject({ url: "/api/users", headers: { authorization: `Bearer ${token}` } });
    assert.equal(after.statusCode, 401);
    const login = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "to-disable", password: "to-disable-password" },
    });
    assert.equal(login.statusCode, 401);
    assert.equal(login.json().code, "admin_disabled");
  });

  test("the last active owner cannot be demoted, disabled or deleted; nobody disables or deletes themself", async () => {
    const me = (await team.app.inject({ url: "/api/auth/me", headers: team.auth })).json();
    for (const payload of [{ role: "operator" }, { is_disabled: true }]) {
      const res = await team.app.inject({
        method: "PUT",
        url: `/api/admins/${me.id}`,
        headers: team.auth,
        payload,
      });
      assert.equal(res.statusCode, 409, res.body);
    }
    const self = await team.app.inject({ method: "DELETE", url: `/api/admins/${me.id}`, headers: team.auth });
    assert.equal(self.json().code, "cannot_delete_self");
    const second = await teamAdmin("second-owner", "owner");
    const other = await team.app.inject({
      method: "DELETE",
      url: `/api/admins/${second.id}`,
      headers: team.auth,
    });
    assert.equal(other.statusCode, 204);
    assert.equal((await team.app.inject({ url: "/api/auth/me", headers: team.auth })).json().role, "owner");
  });

  test("two owners demoting each other at the same time leave one owner, not none", async () => {
    const a = await teamAdmin("race-owner-a", "owner");
    const b = await teamAdmin("race-owner-b", "owner");
    const [tokenA, tokenB] = [await teamSignIn("race-owner-a"), await teamSignIn("race-owner-b")];
    // The bootstrap owner steps down (allowed: two others remain), leaving exactly a and b.
    const me = (await team.app.inject({ url: "/api/auth/me", headers: team.auth })).json();
    const down = await team.app.inject({
      method: "PUT",
      url: `/api/admins/${me.id}`,
      headers: { authorization: `Bearer ${tokenA}` },
      payload: { role: "operator" },
    });
    assert.equal(down.statusCode, 200, down.body);
    const demote = (token: string, id: string) =>
      team.app.inject({
        method: "PUT",
        url: `/api/admins/${id}`,
        headers: { authorization: `Bearer ${token}` },
        payload: { role: "viewer" },
      });
    const results = await Promise.all([demote(tokenA, b.id), demote(tokenB, a.id)]);
    const statuses = results.map((r) => r.statusCode).sort();
    // One demotion wins; the other is refused (409 last_owner, or 403 if its author was demoted first).
    assert.equal(statuses[0], 200, statuses.join(","));
    assert.ok([403, 409].includes(statuses[1] ?? 0), statuses.join(","));
    const survivor = results[0]?.statusCode === 200 ? tokenA : tokenB;
    const owners = (
      (
        await team.app.inject({ url: "/api/admins", headers: { authorization: `Bearer ${survivor}` } })
      ).json() as {
        role: Role;
        is_disabled: boolean;
      }[]
    ).filter((admin) => admin.role === "owner" && !admin.is_disabled);
    assert.equal(owners.length, 1);
  });
});

describe("API keys carry a role", () => {
  test("a key narrowed to viewer reads but cannot write; a key cannot exceed its admin's role", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/api-keys",
      headers: as("operator"),
      payload: { name: "read-only", role: "viewer" },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().role, "viewer");
    const headers = { authorization: `Bearer ${created.json().key}` };
    assert.equal((await t.app.inject({ url: "/api/users", headers })).statusCode, 200);
    const write = await t.app.inject({ method: "POST", url: "/api/users", headers, payload: { name: "x" } });
    assert.equal(write.statusCode, 403);
    const me = (await t.app.inject({ url: "/api/auth/me", headers })).json();
    assert.deepEqual([me.role, me.admin_role, me.token_kind], ["viewer", "operator", "api_key"]);
    const above = await t.app.inject({
      method: "POST",
      url: "/api/api-keys",
      headers: as("support"),
      payload: { name: "escalate", role: "operator" },
    });
    assert.equal(above.statusCode, 403);
    assert.equal(above.json().code, "role_not_within");
  });
});
