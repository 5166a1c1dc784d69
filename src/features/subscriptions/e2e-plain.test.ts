// End to end without TLS, on a real V2Ray 4.34 core: template, inbound and grant through the HTTP
// API, the subscription fetched and decoded by the test's own decoder, and real clients (v2ray,
// ss-local) configured only from those links carrying a page. Revoking the grant stops them.
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
  type Kind,
  type RealClient,
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

const needs = requires("v2ray", "ss-local");

const stack = new CleanupStack();
const BODY = randomBytes(40_000);
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let httpPort: number;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort, { name: "e2e plain" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

type Case = { name: string; kind: Kind; clients: RealClient[] };

const CASES: Case[] = [
  { name: "vless over tcp", kind: { protocol: "vless", network: "tcp", tls: false }, clients: ["v2ray"] },
  { name: "vless over ws", kind: { protocol: "vless", network: "ws", tls: false }, clients: ["v2ray"] },
  { name: "vmess over tcp", kind: { protocol: "vmess", network: "tcp", tls: false }, clients: ["v2ray"] },
  { name: "vmess over ws", kind: { protocol: "vmess", network: "ws", tls: false }, clients: ["v2ray"] },
  {
    name: "shadowsocks aes-128-gcm",
    kind: { protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-128-gcm" },
    clients: ["v2ray", "ss-local"],
  },
  {
    name: "shadowsocks chacha20-ietf-poly1305",
    kind: { protocol: "shadowsocks", network: "tcp", tls: false, method: "chacha20-ietf-poly1305" },
    clients: ["v2ray", "ss-local"],
  },
];

describe("each protocol and transport V2Ray 4.34 supports without TLS", needs, () => {
  for (const c of CASES) {
    test(`${c.name}: real clients (${c.clients.join(", ")}) carry a page through the subscription's link until the grant is revoked`, async () => {
      const template = await templateFor(t, c.kind);
      const port = await freePort();
      const inbound = await createInbound(t, serverId, { template_id: template.id, port, is_active: true });
      assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
      const access = await grant(t, serverId, inbound.id, { name: `e2e ${c.name}` });
      assert.equal(access.sync_state, "synced", String(access.sync_error));

      const [link, ...more] = await subscriptionLinks(t, access.user_id);
      assert.ok(link !== undefined && more.length === 0, "one link");
      const target = decodeLink(link);
      assert.equal(target.protocol, c.kind.protocol);
      assert.equal(target.host, "127.0.0.1");
      assert.equal(target.port, port);
      const socksPorts: number[] = [];
      for (const client of c.clients) {
        const socksPort = await startClient(stack.add, client, target);
        await expectCarries(socksPort, httpPort, BODY, `${client} (${c.name})`);
        socksPorts.push(socksPort);
      }

      const revoked = await request(
        t,
        "DELETE",
        `/api/servers/${serverId}/inbounds/${inbound.id}/users/${access.proxy_user_id}`,
      );
      assert.equal(revoked.statusCode, 204, revoked.body);
      for (const [index, socksPort] of socksPorts.entries()) {
        await expectBlocked(socksPort, httpPort, BODY, `${c.clients[index]} (${c.name}) after revocation`);
      }
      assert.deepEqual(await subscriptionLinks(t, access.user_id), []);
      assert.ok(core.isAlive(), "the core survived");
    });
  }

  test("one user on four inbounds of one server: four links, one proxy id, each carries a page", async () => {
    const kinds = CASES.slice(0, 4).map((c) => c.kind);
    const user = (await request(t, "POST", "/api/users", { name: "Many Inbounds" })).json() as { id: string };
    const proxyIds = new Set<string>();
    for (const kind of kinds) {
      const template = await templateFor(t, kind);
      const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
      proxyIds.add((await grant(t, serverId, inbound.id, { user_id: user.id })).proxy_user_id);
    }
    assert.equal(proxyIds.size, 1, "all grants of a user on one server share the proxy id");
    const links = await subscriptionLinks(t, user.id);
    assert.deepEqual(
      links.map((link) => decodeLink(link).protocol),
      kinds.map((kind) => kind.protocol),
    );
    for (const link of links) {
      const socksPort = await startClient(stack.add, "v2ray", decodeLink(link));
      await expectCarries(socksPort, httpPort, BODY, link.slice(0, 40));
    }
    assert.ok(core.isAlive());
  });
});
