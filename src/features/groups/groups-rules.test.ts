// Groups under attack, against a real V2Ray core on whichever dialect DATABASE_URL selects: group
// changes racing each other on the same inbounds end in what the memberships say (no stale grant,
// none missing, the core agreeing), and the roles without access.write change nothing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUsers, grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";
import { ConflictError } from "../../lib/errors.ts";
import { GroupsRepository } from "./groups.repository.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let templateId: string;
const tokens = new Map<string, string>();

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort, { name: "rules core" })).id;
  templateId = (await templateFor(t, { protocol: "trojan", network: "tcp", tls: false })).id;
  for (const role of ["operator", "support", "viewer"] as const) {
    const password = `groups-${role}-password`;
    const made = await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: `groups-${role}`, password, role },
    });
    assert.equal(made.statusCode, 201, made.body);
    const signed = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: `groups-${role}`, password },
    });
    tokens.set(role, signed.json().access_token);
  }
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const newInbound = async () =>
  createInbound(t, serverId, { template_id: templateId, port: await freePort() });

async function grantedUsers(inboundId: string): Promise<string[]> {
  const rows = await t.deps.database.db
    .selectFrom("user_access")
    .select("user_id")
    .where("server_inbound_id", "=", inboundId)
    .execute();
  return rows.map((row) => row.user_id).sort();
}

describe("groups under concurrency and roles", needs, () => {
  test("membership and inbound changes racing on one group end as the memberships say, on the core too", async () => {
    const [first, second] = [await newInbound(), await newInbound()];
    const users = await createUsers(t.deps, 40, "racer");
    const made = await request(t, "POST", "/api/groups", { name: "racing", inbound_ids: [first.id] });
    assert.equal(made.statusCode, 201, made.body);
    const groupId = made.json().id as string;
    const base = `/api/groups/${groupId}`;
    const results = await Promise.all([
      request(t, "POST", `${base}/members`, { user_ids: users.slice(0, 20) }),
      request(t, "POST", `${base}/inbounds`, { inbound_ids: [second.id] }),
      request(t, "POST", `${base}/members`, { user_ids: users.slice(20) }),
      request(t, "DELETE", `${base}/inbounds/${first.id}`),
      request(t, "POST", `${base}/members/remove`, { user_ids: users.slice(30) }),
      ...users.slice(10, 15).map((userId) => request(t, "PUT", `/api/users/${userId}`, { group_ids: [] })),
    ]);
    for (const res of results) assert.equal(res.statusCode < 300, true, res.body);
    const members: string[] = [];
    for (let after: string | undefined; ; ) {
      const page = await request(t, "GET", `${base}/members?limit=500${after ? `&after=${after}` : ""}`);
      const body = page.json() as { items: { id: string }[]; next_cursor: string | null };
      members.push(...body.items.map((m) => m.id));
      if (body.next_cursor === null) break;
      after = body.next_cursor;
    }
    assert.deepEqual(await grantedUsers(first.id), [], "the removed inbound holds no group grant");
    assert.deepEqual(await grantedUsers(second.id), members.sort(), "exactly the members hold the added one");
    const onSecond = (await grantsOf(t.deps, serverId)).filter((g) => g.tag === second.tag);
    const probe = await probeCore(core.apiAddress, onSecond);
    assert.equal(probe.absent.length, 0, "every member's grant is on the core");
  });

  test("support and viewer cannot create, change or join groups: 403, nothing written", async () => {
    const inbound = await newInbound();
    const made = await request(t, "POST", "/api/groups", { name: "guarded", inbound_ids: [inbound.id] });
    const groupId = made.json().id as string;
    const [userId] = await createUsers(t.deps, 1, "guarded");
    for (const role of ["support", "viewer"] as const) {
      const headers = { authorization: `Bearer ${tokens.get(role)}` };
      const attempts = [
        { method: "POST" as const, url: "/api/groups", payload: { name: `by-${role}` } },
        { method: "PUT" as const, url: `/api/groups/${groupId}`, payload: { inbound_ids: [] } },
        { method: "DELETE" as const, url: `/api/groups/${groupId}` },
        { method: "POST" as const, url: `/api/groups/${groupId}/members`, payload: { user_ids: [userId] } },
        { method: "DELETE" as const, url: `/api/groups/${groupId}/inbounds/${inbound.id}` },
        { method: "PUT" as const, url: `/api/users/${userId}`, payload: { group_ids: [groupId] } },
        { method: "POST" as const, url: "/api/users", payload: { name: `x-${role}`, group_ids: [groupId] } },
      ];
      for (const attempt of attempts) {
        const res = await t.app.inject({ ...attempt, headers });
        assert.equal(res.statusCode, 403, `${role} ${attempt.method} ${attempt.url}: ${res.body}`);
      }
    }
    const viewer = { authorization: `Bearer ${tokens.get("viewer")}` };
    const read = await t.app.inject({ method: "GET", url: `/api/groups/${groupId}`, headers: viewer });
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(read.json().inbound_ids, [inbound.id]);
    assert.equal(read.json().member_count, 0);
    const operator = { authorization: `Bearer ${tokens.get("operator")}` };
    const joined = await t.app.inject({
      method: "POST",
      url: `/api/groups/${groupId}/members`,
      headers: operator,
      payload: { user_ids: [userId] },
    });
    assert.equal(joined.statusCode, 200, joined.body);
  });

  test("a write racing a delete (the group gone before its members are written) is a 409 conflict, not a 500", async () => {
    const repo = new GroupsRepository(t.deps.database.db);
    const [userId = ""] = await createUsers(t.deps, 1, "late");
    const gone = "00000000-0000-4000-8000-0000000000ff";
    await assert.rejects(repo.addMembers(gone, [userId]), (error: unknown) => {
      assert.ok(error instanceof ConflictError, String(error));
      return true;
    });
    const inbound = await newInbound();
    await assert.rejects(repo.addInbounds(gone, [inbound.id]), ConflictError);
  });
});
