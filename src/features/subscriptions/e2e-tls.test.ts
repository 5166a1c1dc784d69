// End to end with TLS on a real V2Ray 4.34 core: the certificate comes from the certificates API
// (self_signed for "localhost"), the links are honest (no allowInsecure) and the clients verify the
// server against that certificate. Also: renewing the certificate re-applies the inbounds using it.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
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
  tempDir,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";

const needs = requires("v2ray", "trojan");

const stack = new CleanupStack();
const BODY = randomBytes(40_000);
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let httpPort: number;
let certificate: { id: string; file: string };

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  core = await startV2rayServer(stack.add);
  certificate = await apiCertificate(t, stack.add, "localhost");
  const server = await registerServer(t, core.apiPort, {
    name: "e2e tls",
    default_certificate_id: certificate.id,
  });
  serverId = server.id;
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

type Case = { name: string; kind: Kind; clients: RealClient[] };

const CASES: Case[] = [
  { name: "vless over tcp+tls", kind: { protocol: "vless", network: "tcp", tls: true }, clients: ["v2ray"] },
  { name: "vless over ws+tls", kind: { protocol: "vless", network: "ws", tls: true }, clients: ["v2ray"] },
  { name: "vmess over tcp+tls", kind: { protocol: "vmess", network: "tcp", tls: true }, clients: ["v2ray"] },
  { name: "vmess over ws+tls", kind: { protocol: "vmess", network: "ws", tls: true }, clients: ["v2ray"] },
  {
    name: "trojan over tcp+tls",
    kind: { protocol: "trojan", network: "tcp", tls: true },
    clients: ["v2ray", "trojan"],
  },
];

describe("each protocol and transport V2Ray 4.34 supports with TLS", needs, () => {
  for (const c of CASES) {
    test(`${c.name}: real clients (${c.clients.join(", ")}) verify the API's certificate and carry a page until the grant is revoked`, async () => {
      const template = await templateFor(t, c.kind);
      const port = await freePort();
      // The certificate is the server's default: the inbound takes it without being told.
      const inbound = await createInbound(t, serverId, { template_id: template.id, port, is_active: true });
      assert.equal(inbound.certificate_id, certificate.id);
      assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
      const access = await grant(t, serverId, inbound.id, { name: `e2e ${c.name}` });
      assert.equal(access.sync_state, "synced", String(access.sync_error));

      const [link] = await subscriptionLinks(t, access.user_id);
      assert.ok(link !== undefined);
      const target = decodeLink(link);
      assert.ok(target.protocol !== "shadowsocks" && target.security.type === "tls", link);
      assert.equal(target.security.sni, "localhost");
      assert.equal(target.security.allowInsecure, undefined, "links stay honest");
      const socksPorts: number[] = [];
      for (const client of c.clients) {
        const socksPort = await startClient(stack.add, client, target, certificate.file);
        await expectCarries(socksPort, httpPort, BODY, `${client} (${c.name})`);
        socksPorts.push(socksPort);
      }

      // Revoked by the user's uuid this time (the other file uses the proxy_user_id).
      const revoked = await request(
        t,
        "DELETE",
        `/api/servers/${serverId}/inbounds/${inbound.id}/users/${access.user_id}`,
      );
      assert.equal(revoked.statusCode, 204, revoked.body);
      for (const [index, socksPort] of socksPorts.entries()) {
        await expectBlocked(socksPort, httpPort, BODY, `${c.clients[index]} (${c.name}) after revocation`);
      }
      assert.ok(core.isAlive(), "the core survived");
    });
  }

  test("renewing the certificate re-applies its inbounds: old trust fails, the new certificate works", async () => {
    const renewable = await apiCertificate(t, stack.add, "localhost");
    const template = await templateFor(t, { protocol: "vless", network: "ws", tls: true });
    const inbound = await createInbound(t, serverId, {
      template_id: template.id,
      port: await freePort(),
      certificate_id: renewable.id,
    });
    const access = await grant(t, serverId, inbound.id, { name: "renewal" });
    const [link] = await subscriptionLinks(t, access.user_id);
    assert.ok(link !== undefined);
    const oldTrust = await startClient(stack.add, "v2ray", decodeLink(link), renewable.file);
    await expectCarries(oldTrust, httpPort, BODY, "client trusting the first certificate");

    const renewed = await request(t, "POST", `/api/certificates/${renewable.id}/renew`);
    assert.equal(renewed.statusCode, 200, renewed.body);
    await expectBlocked(oldTrust, httpPort, BODY, "client trusting the replaced certificate");
    const newFile = join(tempDir(stack.add), "renewed.pem");
    writeFileSync(newFile, (renewed.json() as { certificate_pem: string }).certificate_pem);
    const newTrust = await startClient(stack.add, "v2ray", decodeLink(link), newFile);
    await expectCarries(newTrust, httpPort, BODY, "client trusting the renewed certificate");
    const after = (await request(t, "GET", `/api/servers/${serverId}/inbounds/${inbound.id}`)).json();
    assert.equal(after.sync_state, "synced");
    assert.ok(core.isAlive());
  });
});
