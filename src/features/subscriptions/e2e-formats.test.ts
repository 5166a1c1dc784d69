// The xray-json format against real software: each config of a user's /sub/{token}/xray-json (one
// per link) is run as it is by the real v2ray 4.34 client — only its local inbound moved to a free
// port, and TLS told to trust the test certificate — and carries a page through the real core, for
// every protocol Debian's v2ray understands (VLESS and VMess over TCP and WebSocket with and without
// TLS, Trojan, Shadowsocks AEAD). Then revoke-subscription: the old URL is 404, the old configs stop
// connecting through the core, the new URL's configs connect.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
  createInbound,
  expectBlocked,
  expectCarries,
  grant,
  type Kind,
  registerServer,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import {
  CleanupStack,
  startHttpServer,
  startV2rayClient,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = randomBytes(40_000);
let t: TestApp;
let core: V2rayServer;
let httpPort: number;
let caFile: string;
let user: { id: string; subscription_url: string };

const KINDS: Kind[] = [
  { protocol: "vless", network: "tcp", tls: false },
  { protocol: "vless", network: "ws", tls: false },
  { protocol: "vless", network: "tcp", tls: true },
  { protocol: "vless", network: "ws", tls: true },
  { protocol: "vmess", network: "tcp", tls: false },
  { protocol: "vmess", network: "ws", tls: true },
  { protocol: "trojan", network: "tcp", tls: true },
  { protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-128-gcm" },
  { protocol: "shadowsocks", network: "tcp", tls: false, method: "chacha20-ietf-poly1305" },
];

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  core = await startV2rayServer(stack.add);
  const certificate = await apiCertificate(t, stack.add, "localhost");
  caFile = certificate.file;
  const serverId = (await registerServer(t, core.apiPort, { name: "e2e formats" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
  user = (await request(t, "POST", "/api/users", { name: "formats e2e" })).json() as typeof user;
  for (const kind of KINDS) {
    const template = await templateFor(t, kind);
    const inbound = await createInbound(t, serverId, {
      template_id: template.id,
      port: await freePort(),
      ...(kind.tls ? { certificate_id: certificate.id } : {}),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    const access = await grant(t, serverId, inbound.id, { user_id: user.id });
    assert.equal(access.sync_state, "synced", String(access.sync_error));
  }
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

type XrayConfig = {
  remarks: string;
  inbounds: unknown[];
  outbounds: { tag: string; streamSettings?: { security?: string; tlsSettings?: Record<string, unknown> } }[];
};

async function xrayConfigs(path: string): Promise<XrayConfig[]> {
  const res = await t.app.inject({ method: "GET", url: `${path}/xray-json` });
  assert.equal(res.statusCode, 200, res.body);
  return JSON.parse(res.body) as XrayConfig[];
}

/** Runs one config in the real v2ray client: its local inbound on a free port, TLS trusting the test CA. */
async function run(config: XrayConfig): Promise<number> {
  const socksPort = await freePort();
  const proxy = config.outbounds[0];
  const tls = proxy?.streamSettings?.tlsSettings;
  if (tls !== undefined) tls.certificates = [{ usage: "verify", certificateFile: caFile }];
  const local = {
    tag: "socks",
    listen: "127.0.0.1",
    port: socksPort,
    protocol: "socks",
    settings: { auth: "noauth" },
  };
  await startV2rayClient(stack.add, { ...config, remarks: undefined, inbounds: [local] }, [socksPort]);
  return socksPort;
}

describe("xray-json configs in the real v2ray client through the real core", needs, () => {
  test("every config carries a page; after revoke-subscription the old ones stop and the new ones carry", async () => {
    const configs = await xrayConfigs(user.subscription_url);
    assert.equal(configs.length, KINDS.length);
    const oldPorts: number[] = [];
    for (const config of configs) {
      const socksPort = await run(config);
      await expectCarries(socksPort, httpPort, BODY, `v2ray with the xray-json config "${config.remarks}"`);
      oldPorts.push(socksPort);
    }

    const revoked = await request(t, "POST", `/api/users/${user.id}/revoke-subscription`);
    assert.equal(revoked.statusCode, 200, revoked.body);
    const after = revoked.json() as { user: typeof user; grants: { sync_state: string }[] };
    assert.deepEqual(new Set(after.grants.map((g) => g.sync_state)), new Set(["synced"]));
    const old = await t.app.inject({ method: "GET", url: `${user.subscription_url}/xray-json` });
    assert.equal(old.statusCode, 404);
    for (const [i, socksPort] of oldPorts.entries()) {
      await expectBlocked(socksPort, httpPort, BODY, `the old config "${configs[i]?.remarks}"`);
    }
    for (const config of await xrayConfigs(after.user.subscription_url)) {
      const socksPort = await run(config);
      await expectCarries(socksPort, httpPort, BODY, `v2ray with the new config "${config.remarks}"`);
    }
    assert.ok(core.isAlive(), "the core survived");
  });
});
