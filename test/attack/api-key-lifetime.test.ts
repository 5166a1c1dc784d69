// API keys do not outlive their admin's reset or disable (issue 45, finding 5): a key kept by someone
// who was locked out (password reset by an owner or the CLI, account disabled) must not work again,
// not even after the admin is re-enabled. Owners see and revoke every admin's keys.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

type Bearer = { authorization: string };

async function operatorWithKey(username: string): Promise<{ id: string; key: Bearer; session: Bearer }> {
  const password = `${username}-password`;
  const created = await t.app.inject({
    method: "POST",
    url: "/api/admins",
    headers: t.auth,
    payload: { username, password, role: "operator" },
  });
  assert.equal(created.statusCode, 201, created.body);
  const login = await t.app.inject({
    method: "POST",
    url: "/api/auth/token",
    payload: { username, password },
  });
  const session = { authorization: `Bearer ${login.json().access_token}` };
  const made = await t.app.inject({
    method: "POST",
    url: "/api/api-keys",
    headers: session,
    payload: { name: "automation" },
  });
  assert.equal(made.statusCode, 201, made.body);
  const key = { authorization: `Bearer ${made.json().key}` };
  assert.equal(await statusWith(key), 200);
  return { id: created.json().id, key, session };
}

const statusWith = async (headers: Bearer) => (await t.app.inject({ url: "/api/users", headers })).statusCode;
const put = (id: string, payload: object) =>
  t.app.inject({ method: "PUT", url: `/api/admins/${id}`, headers: t.auth, payload });

describe("an API key dies with its admin's reset or disable", () => {
  test("an owner sets a new password: the key is 401", async () => {
    const op = await operatorWithKey("key-reset");
    assert.equal((await put(op.id, { password: "owner-chosen-password" })).statusCode, 200);
    assert.equal(await statusWith(op.key), 401);
    assert.equal(await statusWith(op.session), 401);
  });

  test("the CLI's reset-password: the key is 401", async () => {
    const op = await operatorWithKey("key-cli-reset");
    await t.deps.services.auth.resetPassword("key-cli-reset", "cli-chosen-password");
    assert.equal(await statusWith(op.key), 401);
  });

  test("disabled, then enabled again: the key stays dead", async () => {
    const op = await operatorWithKey("key-disabled");
    assert.equal((await put(op.id, { is_disabled: true })).statusCode, 200);
    assert.equal(await statusWith(op.key), 401);
    assert.equal((await put(op.id, { is_disabled: false })).statusCode, 200);
    const after = await t.app.inject({ url: "/api/users", headers: op.key });
    assert.equal(after.statusCode, 401);
    assert.equal(after.json().code, "invalid_token");
  });

  test("a role change keeps the key (it acts with the new role at once)", async () => {
    const op = await operatorWithKey("key-demoted");
    assert.equal((await put(op.id, { role: "viewer" })).statusCode, 200);
    assert.equal(await statusWith(op.key), 200);
    const write = await t.app.inject({ method: "POST", url: "/api/users", headers: op.key, payload: {} });
    assert.equal(write.statusCode, 403);
  });
});

describe("owners see and revoke every admin's keys", () => {
  test("list, revoke one (401 at once, audited), 404 for a key of someone else, 403 for non-owners", async () => {
    const op = await operatorWithKey("key-listed");
    const other = await operatorWithKey("key-other");
    const list = await t.app.inject({ url: `/api/admins/${op.id}/api-keys`, headers: t.auth });
    assert.equal(list.statusCode, 200, list.body);
    const keys = list.json() as { id: string; name: string; key?: string }[];
    assert.deepEqual(
      keys.map((k) => k.name),
      ["automation"],
    );
    assert.equal(keys[0]?.key, undefined, "the secret is never shown again");
    const keyId = keys[0]?.id as string;

    const wrongAdmin = await t.app.inject({
      method: "DELETE",
      url: `/api/admins/${other.id}/api-keys/${keyId}`,
      headers: t.auth,
    });
    assert.equal(wrongAdmin.statusCode, 404);
    assert.equal(await statusWith(op.key), 200);
    const byOperator = await t.app.inject({ url: `/api/admins/${other.id}/api-keys`, headers: op.session });
    assert.equal(byOperator.statusCode, 403);
    const unknown = await t.app.inject({
      url: "/api/admins/7d9c1c1e-9f0a-4c55-8a43-0d3b5f0e2a11/api-keys",
      headers: t.auth,
    });
    assert.equal(unknown.statusCode, 404);

    const revoke = await t.app.inject({
      method: "DELETE",
      url: `/api/admins/${op.id}/api-keys/${keyId}`,
      headers: t.auth,
    });
    assert.equal(revoke.statusCode, 204, revoke.body);
    assert.equal(await statusWith(op.key), 401);
    assert.equal(await statusWith(other.key), 200, "the other admin's key is untouched");
    const log = await t.app.inject({ url: `/api/audit?target=${keyId}`, headers: t.auth });
    const entry = (
      log.json().items as { action: string; status: number; targets: Record<string, string> }[]
    )[0];
    assert.equal(entry?.status, 204);
    assert.equal(entry?.targets.id, op.id);
  });
});
