// Provisioning rules, through the API, against cores in memory (test/support/memory-core.ts): the
// middle ring, milliseconds per rule. The outer ring (sync-core, convergence, access and the e2e
// tests) proves the same against a real V2Ray and real clients.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { MemoryFleet } from "../../../test/support/memory-core.ts";
import {
  createInbound,
  grant,
  type InboundBody,
  type Kind,
  kindTemplate,
  registerServer,
  subscriptionLinks,
} from "../../../test/support/provisioning.ts";
import { createTemplate, expectProblem, request } from "../../../test/support/templates.ts";
import type { CoreFlavor } from "../../cores/core-types.ts";

const fleet = new MemoryFleet();
let t: TestApp;
let nextPort = 20_000;
const templates = new Map<string, string>();

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "500" }, { cores: fleet });
});
after(async () => {
  await t.close();
});

const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);

/** A server whose core lives in the fleet, detected on first contact. */
async function serverWithCore(flavor: CoreFlavor = "v2ray") {
  const port = nextPort++;
  const core = fleet.add(port, flavor);
  const server = await registerServer(t, port, { name: `${flavor} ${port}` });
  return { core, serverId: server.id };
}

async function templateId(kind: Kind): Promise<string> {
  const key = JSON.stringify(kind);
  let id = templates.get(key);
  if (id === undefined) {
    id = ((await createTemplate(t, kindTemplate(kind))) as { id: string }).id;
    templates.set(key, id);
  }
  return id;
}

const VLESS: Kind = { protocol: "vless", network: "tcp", tls: false };
const SHADOWSOCKS: Kind = { protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-256-gcm" };

async function inbound(
  serverId: string,
  kind = VLESS,
  body: Record<string, unknown> = {},
): Promise<InboundBody> {
  return createInbound(t, serverId, { template_id: await templateId(kind), port: nextPort++, ...body });
}

function tick(serverId: string) {
  return t.deps.services.reconciler.tick(serverId, new AbortController().signal);
}

describe("grants reach the core", () => {
  test("granting access adds the user to the core; revoking it removes the user", async () => {
    const { core, serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    const alice = await grant(t, serverId, id, { name: "Alice" });
    assert.equal(alice.sync_state, "synced");
    assert.deepEqual(core.usersOf(tag), [alice.proxy_user_id]);
    const revoked = await api("DELETE", `/api/servers/${serverId}/inbounds/${id}/users/${alice.user_id}`);
    assert.equal(revoked.statusCode, 204);
    assert.deepEqual(core.usersOf(tag), []);
  });

  test("a bulk grant puts every new user on the core and reports them synced", async () => {
    const { core, serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    const users = [];
    for (const name of ["B1", "B2", "B3"])
      users.push(((await api("POST", "/api/users", { name })).json() as { id: string }).id);
    const res = await api("POST", `/api/servers/${serverId}/inbounds/${id}/users/bulk`, { user_ids: users });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().sync, { synced: 3, pending: 0, error: 0 });
    assert.equal(core.usersOf(tag)?.length, 3);
  });

  test("deleting a user takes every grant of theirs off every core", async () => {
    const [a, b] = [await serverWithCore(), await serverWithCore()];
    const [onA, onB] = [await inbound(a.serverId), await inbound(b.serverId)];
    const first = await grant(t, a.serverId, onA.id, { name: "Leaving" });
    await grant(t, b.serverId, onB.id, { user_id: first.user_id });
    assert.equal((await api("DELETE", `/api/users/${first.user_id}`)).statusCode, 204);
    assert.deepEqual(a.core.usersOf(onA.tag), []);
    assert.deepEqual(b.core.usersOf(onB.tag), []);
  });

  test("a V2Ray shadowsocks inbound holds one user: a second grant, single or bulk, is 422 and stores nothing", async () => {
    const { core, serverId } = await serverWithCore("v2ray");
    const { id, tag } = await inbound(serverId, SHADOWSOCKS);
    assert.deepEqual(core.usersOf(tag), undefined, "no user yet, so nothing on the core");
    const only = await grant(t, serverId, id, { name: "Only" });
    assert.deepEqual(core.usersOf(tag), [only.proxy_user_id], "the user is inside the inbound");
    expectProblem(
      await api("POST", `/api/servers/${serverId}/inbounds/${id}/users`, { name: "Second" }),
      422,
      "core_capacity",
    );
    const other = ((await api("POST", "/api/users", { name: "Third" })).json() as { id: string }).id;
    const bulk = await api("POST", `/api/servers/${serverId}/inbounds/${id}/users/bulk`, {
      user_ids: [other],
    });
    expectProblem(bulk, 422, "core_capacity");
    assert.equal((await api("GET", `/api/servers/${serverId}/inbounds/${id}/configs`)).json().length, 1);
  });
});

describe("inbounds follow their rows", () => {
  test("deactivating an inbound takes it off the core; activating puts it back with its users", async () => {
    const { core, serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    const user = await grant(t, serverId, id, { name: "Toggle" });
    const url = `/api/servers/${serverId}/inbounds/${id}`;
    assert.equal((await api("PUT", url, { is_active: false })).statusCode, 200);
    assert.deepEqual(core.tags(), []);
    assert.equal((await api("PUT", url, { is_active: true })).statusCode, 200);
    assert.deepEqual(core.usersOf(tag), [user.proxy_user_id]);
  });

  test("deleting a server takes its inbounds off its core", async () => {
    const { core, serverId } = await serverWithCore();
    await inbound(serverId);
    await inbound(serverId);
    assert.equal(core.tags().length, 2);
    assert.equal((await api("DELETE", `/api/servers/${serverId}`)).statusCode, 204);
    assert.deepEqual(core.tags(), []);
  });

  test("a template update is applied again to the inbounds made from it", async () => {
    const { core, serverId } = await serverWithCore();
    const template = (await createTemplate(t, kindTemplate(VLESS))) as { id: string; name: string };
    const { tag } = await createInbound(t, serverId, { template_id: template.id, port: nextPort++ });
    const before = core.calls.filter((call) => call === `AddInbound ${tag}`).length;
    const res = await api("PUT", `/api/templates/${template.id}`, { description: "changed" });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(core.calls.filter((call) => call === `AddInbound ${tag}`).length, before + 1);
  });

  test("renaming a server changes the remark of its users' share links", async () => {
    const { serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    const user = await grant(t, serverId, id, { name: "Linked" });
    assert.equal((await api("PUT", `/api/servers/${serverId}`, { name: "Renamed" })).statusCode, 200);
    const [link] = await subscriptionLinks(t, user.user_id);
    assert.ok(link?.endsWith(`#Renamed%20${tag}`), link);
  });
});

describe("convergence", () => {
  test("a core that cannot be reached leaves the grant pending; the next tick adds it", async () => {
    const { core, serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    core.stop();
    const late = await grant(t, serverId, id, { name: "Late" });
    assert.equal(late.sync_state, "pending");
    core.start();
    await tick(serverId);
    assert.deepEqual(core.usersOf(tag), [late.proxy_user_id]);
    const [record] = (await api("GET", `/api/users/${late.user_id}/access`)).json();
    assert.equal(record.sync_state, "synced");
  });

  test("a revoke while the core is down is queued, and the next tick carries it out", async () => {
    const { core, serverId } = await serverWithCore();
    const { id, tag } = await inbound(serverId);
    const gone = await grant(t, serverId, id, { name: "Gone" });
    core.stop();
    const url = `/api/servers/${serverId}/inbounds/${id}/users/${gone.proxy_user_id}`;
    assert.equal((await api("DELETE", url)).statusCode, 204);
    assert.deepEqual(core.usersOf(tag), [gone.proxy_user_id], "still on the core while it is down");
    core.start();
    await tick(serverId);
    assert.deepEqual(core.usersOf(tag), []);
  });

  for (const flavor of ["v2ray", "xray"] as const) {
    test(`a restarted ${flavor} core is re-applied in full: every active inbound and user is back after one tick`, async () => {
      const { core, serverId } = await serverWithCore(flavor);
      const [a, b] = [await inbound(serverId), await inbound(serverId)];
      const users = [
        await grant(t, serverId, a.id, { name: "R1" }),
        await grant(t, serverId, a.id, { name: "R2" }),
      ];
      const third = await grant(t, serverId, b.id, { name: "R3" });
      await inbound(serverId, VLESS, { is_active: false });
      await tick(serverId); // the watch learns this core process
      const held = { [a.tag]: core.usersOf(a.tag), [b.tag]: core.usersOf(b.tag) };
      core.restart();
      assert.deepEqual(core.tags(), []);
      const summary = await tick(serverId);
      assert.equal(summary?.mode, "full", JSON.stringify(summary));
      assert.deepEqual(core.tags(), [a.tag, b.tag].sort(), "the inactive inbound stays off");
      assert.deepEqual(core.usersOf(a.tag), users.map((u) => u.proxy_user_id).sort());
      assert.deepEqual(core.usersOf(b.tag), [third.proxy_user_id]);
      assert.deepEqual({ [a.tag]: core.usersOf(a.tag), [b.tag]: core.usersOf(b.tag) }, held);
    });
  }
});
