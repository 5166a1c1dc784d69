// The audit log: every write leaves exactly one entry with the right actor, action, targets and
// outcome (also a refused or invalid one); sign-ins are recorded for existing admins; no secret
// value is ever in an entry; retention deletes old entries and marks unfinished ones interrupted.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { AuditRepository } from "./audit.repository.ts";
import { AuditService } from "./audit.service.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

type Entry = {
  actor: { kind: string; name: string; id: string | null };
  action: string;
  targets: Record<string, string>;
  fields: string[] | null;
  outcome: string;
  status: number | null;
};

async function entries(query = ""): Promise<Entry[]> {
  const res = await t.app.inject({ url: `/api/audit?per_page=500${query}`, headers: t.auth });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().items as Entry[]).reverse(); // oldest first
}

describe("the audit log", () => {
  test("every write leaves exactly one entry with the right actor, action, targets and outcome", async () => {
    const before = (await entries()).length;
    const operator = await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: "audited-op", password: "audited-op-password", role: "operator" },
    });
    const opLogin = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "audited-op", password: "audited-op-password" },
    });
    const op = { authorization: `Bearer ${opLogin.json().access_token}` };
    const key = await t.app.inject({
      method: "POST",
      url: "/api/api-keys",
      headers: op,
      payload: { name: "audited-key", role: "viewer" },
    });
    const viewerKey = { authorization: `Bearer ${key.json().key}` };
    const user = await t.app.inject({
      method: "POST",
      url: "/api/users",
      headers: op,
      payload: { name: "Audited" },
    });
    const userId = user.json().id as string;
    await t.app.inject({
      method: "PUT",
      url: `/api/users/${userId}`,
      headers: op,
      payload: { comment: "c" },
    });
    await t.app.inject({
      method: "PUT",
      url: `/api/users/${userId}`,
      headers: viewerKey,
      payload: { name: "no" },
    });
    await t.app.inject({ method: "POST", url: "/api/users", headers: op, payload: { name: 42 } });
    await t.app.inject({
      method: "POST",
      url: "/api/servers",
      headers: t.auth,
      payload: {
        name: "audited",
        hostname: "a.example",
        api_credentials: JSON.stringify({ token: "leakcheck-audit" }),
      },
    });
    await t.app.inject({ method: "DELETE", url: `/api/users/${userId}`, headers: op });
    // Reads leave nothing.
    await t.app.inject({ url: "/api/users", headers: op });

    const all = await entries();
    const mine = all.slice(before);
    assert.deepEqual(
      mine.map((e) => [e.actor.kind, e.actor.name, e.action, e.outcome, e.status]),
      [
        ["session", "admin", "admins.create", "succeeded", 201],
        ["anonymous", "audited-op", "auth.login", "succeeded", 200],
        ["session", "audited-op", "api_keys.create", "succeeded", 201],
        ["session", "audited-op", "users.create", "succeeded", 201],
        ["session", "audited-op", "users.update", "succeeded", 200],
        ["api_key", "audited-op", "users.update", "failed", 403],
        ["session", "audited-op", "users.create", "failed", 400],
        ["session", "admin", "servers.create", "succeeded", 201],
        ["session", "audited-op", "users.delete", "succeeded", 204],
      ],
    );
    assert.equal(mine[0]?.targets.created_id, operator.json().id);
    assert.equal(mine[3]?.targets.created_id, userId);
    assert.equal(mine[4]?.targets.id, userId);
    assert.deepEqual(mine[4]?.fields, ["comment"]);
    assert.deepEqual(mine[7]?.fields?.sort(), ["api_credentials", "hostname", "name"]);
    const raw = JSON.stringify(all);
    assert.doesNotMatch(raw, /leakcheck|audited-op-password|pck_|pcs_/);
  });

  test("filters: by actor, action, target, outcome", async () => {
    const user = (
      await t.app.inject({
        method: "POST",
        url: "/api/users",
        headers: t.auth,
        payload: { name: "Filtered" },
      })
    ).json();
    await t.app.inject({
      method: "PUT",
      url: `/api/users/${user.id}`,
      headers: t.auth,
      payload: { name: "F2" },
    });
    const byTarget = await entries(`&target=${user.id}`);
    assert.deepEqual(
      byTarget.map((e) => e.action),
      ["users.create", "users.update"],
    );
    const failed = await entries("&outcome=failed");
    assert.ok(failed.every((e) => e.outcome === "failed"));
    const me = (await t.app.inject({ url: "/api/auth/me", headers: t.auth })).json();
    const mine = await entries(`&actor_id=${me.id}&action=users.update`);
    assert.ok(mine.length >= 1 && mine.every((e) => e.action === "users.update" && e.actor.id === me.id));
  });

  test("a wrong password for an existing admin is recorded; an unknown username is not", async () => {
    const count = async () => (await entries("&action=auth.login")).length;
    const start = await count();
    await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "admin", password: "wrong" },
      remoteAddress: "10.7.0.1",
    });
    await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "correct-horse-typed-in-the-wrong-field", password: "x" },
      remoteAddress: "10.7.0.2",
    });
    const logins = await entries("&action=auth.login");
    assert.equal(logins.length, start + 1);
    assert.deepEqual([logins.at(-1)?.outcome, logins.at(-1)?.status], ["failed", 401]);
    assert.doesNotMatch(JSON.stringify(logins), /correct-horse-typed/);
  });

  test("reading a user's share links is recorded (links.read); listing users is not", async () => {
    await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: "audited-support", password: "audited-support-password", role: "support" },
    });
    const login = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "audited-support", password: "audited-support-password" },
    });
    const support = { authorization: `Bearer ${login.json().access_token}` };
    const user = (
      await t.app.inject({ method: "POST", url: "/api/users", headers: t.auth, payload: { name: "Linked" } })
    ).json();
    const before = (await entries()).length;
    for (const url of [
      "/api/users",
      `/api/users/${user.id}`,
      `/api/users/${user.id}/access`,
      `/api/users/${user.id}/configs`,
      `/api/users/${user.id}/access?include_uris=true`,
    ]) {
      const res = await t.app.inject({ url, headers: support });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    }
    const added = (await entries()).slice(before);
    assert.deepEqual(
      added.map((e) => [e.actor.name, e.action, e.targets.user_id ?? e.targets.id, e.status]),
      [
        ["audited-support", "links.read", user.id, 200],
        ["audited-support", "links.read", user.id, 200],
      ],
    );
  });

  test("only owners read the audit log", async () => {
    await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: "audit-viewer", password: "audit-viewer-password", role: "operator" },
    });
    const token = (
      await t.app.inject({
        method: "POST",
        url: "/api/auth/token",
        payload: { username: "audit-viewer", password: "audit-viewer-password" },
      })
    ).json().access_token;
    const res = await t.app.inject({ url: "/api/audit", headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.statusCode, 403);
  });

  test("retention deletes old entries and marks calls that never finished as interrupted", async () => {
    let nowMs = Date.now();
    const audit = new AuditService(new AuditRepository(t.deps.database.db), 30, () => new Date(nowMs));
    const start = {
      actor: { kind: "cli" as const, id: null, name: "root", tokenId: null },
      action: "retention.probe",
      method: null,
      route: null,
      targets: {},
      ip: null,
      requestId: null,
    };
    await audit.record(start, 200);
    await audit.begin(start);
    nowMs += 2 * 3_600_000;
    assert.deepEqual(await audit.prune(), { deleted: 0, interrupted: 1 });
    nowMs += 31 * 86_400_000;
    const pruned = await audit.prune();
    assert.ok(pruned.deleted >= 2, JSON.stringify(pruned));
    const left = await audit.list({ action: "retention.probe" }, 1, 10);
    assert.equal(left.total, 0);
  });
});
