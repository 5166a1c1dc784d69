// Groups against a real V2Ray core, on whichever dialect DATABASE_URL selects: a group's inbound
// reaches every member on the core (probed through the core's own API), a member's link carries
// traffic through a real v2ray client, removing the inbound revokes them all, and the time that
// takes is compared with the core's own AddUser time for as many users, measured in the same run.
// A user's own grant and a group's grant of the same inbound are one grant with two sources.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUsers, grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
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
import { expectProblem, request } from "../../../test/support/templates.ts";
import {
  CleanupStack,
  startHttpServer,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";
import { run as runCli } from "../../cli/groups.ts";
import { GrpcCoreClient } from "../../cores/grpc-core-client.ts";
import { buildUser } from "../../cores/inbound-builder/build.ts";
import { limiter, settleAll } from "../../lib/limiter.ts";
import { USER_PUSH_PARALLELISM } from "../sync/push.ts";

const needs = requires("v2ray");
const BODY = randomBytes(20_000);
const MEMBERS = Number(process.env.PORTCULLIS_GROUP_MEMBERS ?? 1000);

const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let templateId: string;
let httpPort: number;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort, { name: "group core" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
  templateId = (await templateFor(t, { protocol: "vless", network: "tcp", tls: false })).id;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const newInbound = async () =>
  createInbound(t, serverId, { template_id: templateId, port: await freePort() });

async function createGroup(
  body: object,
): Promise<{ id: string; inbound_ids: string[]; member_count: number }> {
  const res = await request(t, "POST", "/api/groups", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

async function ok(method: "GET" | "POST" | "PUT" | "DELETE", url: string, body?: object) {
  const res = await request(t, method, url, body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Which of the users the core holds on this inbound, probed through its API. */
async function onCore(inboundTag: string, userIds?: readonly string[]) {
  const grants = (await grantsOf(t.deps, serverId)).filter((g) => g.tag === inboundTag);
  const rows = await t.deps.database.db
    .selectFrom("user_access")
    .select(["user_id", "proxy_user_id"])
    .where("server_id", "=", serverId)
    .execute();
  const wanted = userIds === undefined ? undefined : new Set(userIds);
  const emails = new Set(
    rows.filter((row) => wanted === undefined || wanted.has(row.user_id)).map((r) => r.proxy_user_id),
  );
  return probeCore(
    core.apiAddress,
    grants.filter((g) => emails.has(g.email)),
  );
}

/** The core's own time to AddUser `count` users, as many at once as the panel pushes. */
async function coreAddTimeMs(inboundTag: string, count: number): Promise<number> {
  const client = new GrpcCoreClient({ address: core.apiAddress, layout: "v2ray-4", timeoutMs: 5000 });
  const users = Array.from({ length: count }, (_, i) => {
    const built = buildUser("vless", "v2ray", { email: `baseline-${i}@x`, credential: randomUUID() });
    if (!built.ok) throw new Error(JSON.stringify(built.problems));
    return built.value;
  });
  try {
    const startedMs = performance.now();
    const added = await settleAll(users, limiter(USER_PUSH_PARALLELISM), (user) =>
      client.addUser({ tag: inboundTag, protocol: "vless" }, user),
    );
    const elapsedMs = performance.now() - startedMs;
    assert.equal(added.filter((r) => r.status === "rejected").length, 0, "the core added every user");
    await settleAll(users, limiter(USER_PUSH_PARALLELISM), (user) =>
      client.removeUser(inboundTag, user.email),
    );
    return elapsedMs;
  } finally {
    client.close();
  }
}

describe("groups on a real core", needs, () => {
  test(`adding an inbound to a group of ${MEMBERS} grants them all on the core; removing it revokes them all`, async () => {
    const inbound = await newInbound();
    const baselineInbound = await newInbound();
    const users = await createUsers(t.deps, MEMBERS, "member");
    const group = await createGroup({ name: "fleet" });
    const joined = await ok("POST", `/api/groups/${group.id}/members`, { user_ids: users });
    assert.equal(joined.changed, MEMBERS);

    const coreMs = await coreAddTimeMs(baselineInbound.tag, MEMBERS);
    const startedMs = performance.now();
    const added = await ok("POST", `/api/groups/${group.id}/inbounds`, { inbound_ids: [inbound.id] });
    const panelMs = performance.now() - startedMs;
    assert.deepEqual(added.inbounds[0].sync, { synced: MEMBERS, pending: 0, error: 0 });
    assert.deepEqual(added.group.inbound_ids, [inbound.id]);
    const present = await onCore(inbound.tag);
    assert.equal(present.present.length, MEMBERS, "every member is on the core");
    assert.equal(present.absent.length, 0);
    console.log(
      `group of ${MEMBERS}: core AddUser ${coreMs.toFixed(0)} ms, group add ${panelMs.toFixed(0)} ms (${(panelMs / coreMs).toFixed(2)}x)`,
    );
    assert.ok(
      panelMs <= 1.5 * coreMs,
      `converging took ${panelMs.toFixed(0)} ms, more than 1.5 × the core's ${coreMs.toFixed(0)} ms`,
    );

    const [member] = users;
    assert.ok(member !== undefined);
    const [link] = await subscriptionLinks(t, member);
    assert.ok(link !== undefined, "the member's subscription has the group's inbound");
    const socks = await startClient(stack.add, "v2ray", decodeLink(link));
    await expectCarries(socks, httpPort, BODY, "a group member's link");

    const removeStartedMs = performance.now();
    const removed = await ok("DELETE", `/api/groups/${group.id}/inbounds/${inbound.id}`);
    const removeMs = performance.now() - removeStartedMs;
    console.log(`group of ${MEMBERS}: removing the inbound ${removeMs.toFixed(0)} ms`);
    assert.equal(removed.inbounds[0].revoked, MEMBERS);
    const rows = await t.deps.database.db
      .selectFrom("user_access")
      .select("id")
      .where("server_inbound_id", "=", inbound.id)
      .execute();
    assert.equal(rows.length, 0, "no grant is left on the inbound");
    await expectBlocked(socks, httpPort, BODY, "the removed member's link");
  });

  test("an own grant and a group grant are one grant: the group going leaves the own grant", async () => {
    const inbound = await newInbound();
    const [own, viaGroup, both] = await createUsers(t.deps, 3, "source");
    assert.ok(own !== undefined && viaGroup !== undefined && both !== undefined);
    await grant(t, serverId, inbound.id, { user_id: own });
    await grant(t, serverId, inbound.id, { user_id: both });
    const group = await createGroup({ name: "sources", inbound_ids: [inbound.id] });
    await ok("POST", `/api/groups/${group.id}/members`, { user_ids: [viaGroup, both] });
    const access = async (userId: string) => (await ok("GET", `/api/users/${userId}/access`)) as never[];
    const [bothGrant] = (await access(both)) as { is_own: boolean; id: string }[];
    assert.equal(bothGrant?.is_own, true, "one grant for the user holding it twice");
    const [groupGrant] = (await access(viaGroup)) as { is_own: boolean }[];
    assert.equal(groupGrant?.is_own, false);

    // Revoking the group-only grant directly is refused; revoking the own one keeps the group's.
    const revokeUrl = (userId: string) => `/api/servers/${serverId}/inbounds/${inbound.id}/users/${userId}`;
    expectProblem(await request(t, "DELETE", revokeUrl(viaGroup)), 409, "granted_by_group");
    assert.equal((await request(t, "DELETE", revokeUrl(both))).statusCode, 204);
    assert.equal(((await access(both)) as { is_own: boolean }[])[0]?.is_own, false);
    await grant(t, serverId, inbound.id, { user_id: both }); // own again

    const res = await request(t, "DELETE", `/api/groups/${group.id}`);
    assert.equal(res.statusCode, 204, res.body);
    const after = await onCore(inbound.tag, [own, viaGroup, both]);
    assert.equal(after.present.length, 2, "the two own grants stay on the core");
    assert.equal((await access(viaGroup)).length, 0, "the group-only grant is gone");
    assert.equal((await access(own)).length, 1);
    assert.equal((await access(both)).length, 1);
  });

  test("group_ids on a user: create, read, update; leaving the last group revokes", async () => {
    const inbound = await newInbound();
    const a = await createGroup({ name: "alpha", inbound_ids: [inbound.id] });
    const b = await createGroup({ name: "beta", inbound_ids: [inbound.id] });
    const res = await request(t, "POST", "/api/users", { name: "joiner", group_ids: [a.id, b.id] });
    assert.equal(res.statusCode, 201, res.body);
    const user = res.json() as { id: string; group_ids: string[] };
    assert.deepEqual(user.group_ids, [a.id, b.id]);
    assert.deepEqual((await ok("GET", `/api/users/${user.id}`)).group_ids, [a.id, b.id]);
    assert.equal((await onCore(inbound.tag, [user.id])).present.length, 1);

    const leftOne = await ok("PUT", `/api/users/${user.id}`, { group_ids: [b.id] });
    assert.deepEqual(leftOne.group_ids, [b.id]);
    assert.equal((await onCore(inbound.tag, [user.id])).present.length, 1, "beta still gives it");
    const members = await ok("GET", `/api/groups/${a.id}/members`);
    assert.equal(members.total, 0);

    const leftAll = await ok("PUT", `/api/users/${user.id}`, { group_ids: [] });
    assert.deepEqual(leftAll.group_ids, []);
    const grants = await ok("GET", `/api/users/${user.id}/access`);
    assert.equal(grants.length, 0);
    const missing = "00000000-0000-4000-8000-000000000000";
    const bad = await request(t, "PUT", `/api/users/${user.id}`, { group_ids: [missing] });
    assert.deepEqual(expectProblem(bad, 400, "validation_failed")[0]?.path, "body.group_ids.0");
  });

  test("bulk membership over a filter; bad input is a problem, never a 500", async () => {
    const inbound = await newInbound();
    const group = await createGroup({ name: "limited-ones", inbound_ids: [inbound.id] });
    const [limited, active] = await createUsers(t.deps, 2, "filtered");
    assert.ok(limited !== undefined && active !== undefined);
    await t.deps.database.db
      .updateTable("users")
      .set({ status: "disabled" })
      .where("id", "=", limited)
      .execute();
    const joined = await ok("POST", `/api/groups/${group.id}/members`, { filter: { status: ["disabled"] } });
    assert.ok(joined.changed >= 1);
    const page = await ok("GET", `/api/groups/${group.id}/members?limit=500`);
    const ids = page.items.map((m: { id: string }) => m.id);
    assert.ok(ids.includes(limited) && !ids.includes(active));
    const left = await ok("POST", `/api/groups/${group.id}/members/remove`, {
      filter: { status: ["disabled"] },
    });
    assert.equal(left.changed, joined.changed);

    expectProblem(await request(t, "POST", "/api/groups", { name: "fleet\u202e" }), 400, "validation_failed");
    expectProblem(await request(t, "POST", "/api/groups", { name: "limited-ones" }), 409, "group_name_taken");
    const unknownInbound = { inbound_ids: ["00000000-0000-4000-8000-000000000001"] };
    expectProblem(
      await request(t, "POST", `/api/groups/${group.id}/inbounds`, unknownInbound),
      400,
      "validation_failed",
    );
    expectProblem(await request(t, "POST", `/api/groups/${group.id}/members`, {}), 400, "validation_failed");
    expectProblem(
      await request(t, "POST", `/api/groups/${group.id}/members`, {
        user_ids: [active],
        filter: { status: ["active"] },
      }),
      400,
      "validation_failed",
    );
    const missing = "/api/groups/00000000-0000-4000-8000-000000000002";
    expectProblem(await request(t, "GET", missing), 404, "not_found");
    expectProblem(await request(t, "DELETE", `${missing}/members/${active}`), 404, "not_found");
    expectProblem(await request(t, "GET", "/api/groups/not-a-uuid"), 400, "validation_failed");
    expectProblem(await request(t, "GET", "/api/groups/%2e%2e"), 404, "route_not_found");
  });
});

describe("portcullis groups", needs, () => {
  test("create, add-inbound, members --add/--remove and list go through the service; bad usage exits 2", async () => {
    const inbound = await newInbound();
    const [first, second] = await createUsers(t.deps, 2, "cli-member");
    assert.ok(first !== undefined && second !== undefined);
    const out: string[] = [];
    const context = {
      deps: t.deps,
      write: (text: string) => out.push(text),
      writeError: (text: string) => out.push(text),
    };
    assert.equal(await runCli(["create", "cli-group"], context), 0);
    assert.equal(await runCli(["members", "cli-group", "--add", first, "--add", second], context), 0);
    assert.equal(await runCli(["add-inbound", "cli-group", inbound.id], context), 0);
    assert.match(
      out.join(""),
      /added 2 of 2 users; granted 0\n.*: granted 2 \(synced 2, pending 0, error 0\)\n$/s,
    );
    assert.equal((await onCore(inbound.tag, [first, second])).present.length, 2);
    out.length = 0;
    assert.equal(await runCli(["members", "cli-group", "--remove", second], context), 0);
    assert.equal(out.join(""), "removed 1 of 1 users; revoked 1\n");
    out.length = 0;
    assert.equal(await runCli(["members", "cli-group"], context), 0);
    assert.match(out.join(""), new RegExp(`^ID\tNAME\tSTATUS\n${first}\tcli-member 0\tactive\n$`));
    out.length = 0;
    assert.equal(await runCli(["list"], context), 0);
    assert.match(out.join(""), /\ncli-group\t1\t1\t[0-9a-f-]{36}\n/);
    assert.equal(await runCli(["members", "no-such-group"], context), 1);
    assert.equal(await runCli(["add-inbound", "cli-group", "not-an-id"], context), 2);
    assert.equal(await runCli(["frobnicate"], context), 2);
  });
});
