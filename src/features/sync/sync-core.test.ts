// Core sync against a real V2Ray 4.34 core, judged by a real client: an inactive inbound is off the
// core and back when active again, a core that restarted empty gets everything back on the next
// apply, removals that could not reach it are queued, and a deleted server's inbounds are removed.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
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
import { request } from "../../../test/support/templates.ts";
import {
  CleanupStack,
  startHttpServer,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
const BODY = randomBytes(20_000);
let t: TestApp;
let core: V2rayServer;
let httpPort: number;
let templateId: string;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  core = await startV2rayServer(stack.add);
  httpPort = await startHttpServer(stack.add, BODY);
  templateId = (await templateFor(t, { protocol: "vless", network: "ws", tls: false })).id;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const api = (method: "GET" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);

/** A server on the shared core with one inbound, one grant and a running client. */
async function provisioned(name: string) {
  const server = await registerServer(t, core.apiPort, { name });
  const inbound = await createInbound(t, server.id, { template_id: templateId, port: await freePort() });
  const access = await grant(t, server.id, inbound.id, { name: `${name} user` });
  const [link] = await subscriptionLinks(t, access.user_id);
  assert.ok(link !== undefined);
  const socks = await startClient(stack.add, "v2ray", decodeLink(link));
  await expectCarries(socks, httpPort, BODY, `${name} client`);
  return {
    serverId: server.id,
    inbound,
    access,
    socks,
    url: `/api/servers/${server.id}/inbounds/${inbound.id}`,
  };
}

describe("core sync on a real core", needs, () => {
  test("is_active false takes the inbound off the core but keeps it; true puts it back with its users", async () => {
    const p = await provisioned("toggle");
    const off = (await api("PUT", p.url, { is_active: false })).json();
    assert.deepEqual([off.is_active, off.sync_state], [false, "synced"]);
    await expectBlocked(p.socks, httpPort, BODY, "client of the inactive inbound");
    assert.deepEqual(await subscriptionLinks(t, p.access.user_id), [], "an inactive inbound gives no link");
    const on = (await api("PUT", p.url, { is_active: true })).json();
    assert.deepEqual([on.is_active, on.sync_state], [true, "synced"]);
    await expectCarries(p.socks, httpPort, BODY, "client of the active inbound again");
    assert.ok(core.isAlive());
  });

  test("a core that restarted empty is 'pending' while down and gets everything back on the next apply", async () => {
    const p = await provisioned("restart");
    const second = await grant(t, p.serverId, p.inbound.id, { name: "revoked while down" });
    await core.kill();
    const whileDown = (await api("PUT", p.url, {})).json();
    assert.equal(whileDown.sync_state, "pending");
    assert.match(whileDown.sync_error, /.+/);
    const revoke = await api("DELETE", `${p.url}/users/${second.proxy_user_id}`);
    assert.equal(revoke.statusCode, 204, "a revoke succeeds while the core is down");
    const removals = t.deps.database.db
      .selectFrom("core_removals")
      .select("email")
      .where("server_id", "=", p.serverId);
    assert.deepEqual(await removals.execute(), [{ email: second.proxy_user_id }]);

    await core.restart();
    await expectBlocked(p.socks, httpPort, BODY, "client of a core that lost its inbounds");
    const reapplied = (await api("PUT", p.url, {})).json();
    assert.equal(reapplied.sync_state, "synced", reapplied.sync_error);
    await expectCarries(p.socks, httpPort, BODY, "client after the re-apply");
    assert.deepEqual(await removals.execute(), [], "the re-applied inbound makes queued removals moot");
    const access = (await api("GET", `/api/users/${p.access.user_id}/access`)).json();
    assert.equal(access[0].sync_state, "synced");
    assert.ok(core.isAlive());
  });

  test("deleting a server takes its inbounds off the core", async () => {
    const p = await provisioned("deleted");
    assert.equal((await api("DELETE", `/api/servers/${p.serverId}`)).statusCode, 204);
    await expectBlocked(p.socks, httpPort, BODY, "client of a deleted server's inbound");
    assert.deepEqual((await api("GET", `/api/users/${p.access.user_id}/access`)).json(), []);
    assert.ok(core.isAlive());
  });

  test("deleting a server whose core is down does not wait for it", async () => {
    const server = await registerServer(t, await freePort(), { name: "gone for good" });
    await createInbound(t, server.id, { template_id: templateId, port: await freePort() });
    const started = Date.now();
    assert.equal((await api("DELETE", `/api/servers/${server.id}`)).statusCode, 204);
    assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
  });
});
