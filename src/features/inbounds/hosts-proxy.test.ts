// Hosts against the real thing (issue 48): a plain WebSocket inbound on the real v2ray core, with
// Debian's nginx in front terminating TLS (a certificate made here by openssl for cdn.test) and
// proxying the WebSocket to the inbound. The inbound has three hosts: the proxy (TLS override, SNI
// and Host cdn.test), the direct address, and a disabled one. The subscription has exactly two
// links; the real v2ray client, configured only from each decoded link and trusting only that
// certificate, carries a page through the proxy's entry and through the direct one.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { opensslSelfSigned } from "../../../test/support/openssl.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
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
  tempDir,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";

const needs = requires("v2ray", "nginx", "openssl");
const stack = new CleanupStack();
const BODY = randomBytes(40_000);
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let httpPort: number;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort, { name: "behind a proxy" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

/** nginx on loopback: TLS for cdn.test on `port`, every request (WebSocket upgrades too) to `upstream`. */
async function startNginx(port: number, upstream: number): Promise<{ caFile: string; child: ChildProcess }> {
  const dir = tempDir(stack.add);
  const pair = await opensslSelfSigned("DNS:cdn.test");
  writeFileSync(join(dir, "cert.pem"), pair.certificatePem);
  writeFileSync(join(dir, "key.pem"), pair.privateKeyPem, { mode: 0o600 });
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((name) => `${name}_temp_path ${join(dir, name)};`)
    .join("\n  ");
  const conf = `daemon off;
master_process off;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 64; }
http {
  access_log off;
  ${temp}
  server {
    listen 127.0.0.1:${port} ssl;
    server_name cdn.test;
    ssl_certificate ${join(dir, "cert.pem")};
    ssl_certificate_key ${join(dir, "key.pem")};
    location / {
      proxy_pass http://127.0.0.1:${upstream};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_set_header Host $host;
      proxy_read_timeout 30s;
    }
  }
}
`;
  writeFileSync(join(dir, "nginx.conf"), conf);
  const child = spawn("nginx", ["-p", dir, "-e", join(dir, "error.log"), "-c", join(dir, "nginx.conf")], {
    stdio: "ignore",
  });
  stack.add(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
      return fetchTls(port);
    },
    { timeoutMs: 15_000, what: "nginx to listen" },
  );
  return { caFile: join(dir, "cert.pem"), child };
}

/** Whether something speaks TLS on the port (a handshake is enough: the certificate is not checked here). */
async function fetchTls(port: number): Promise<boolean> {
  const { connect } = await import("node:tls");
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, servername: "cdn.test", rejectUnauthorized: false });
    socket.setTimeout(2000, () => socket.destroy());
    socket.once("secureConnect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("close", () => resolve(false));
  });
}

describe("an inbound behind a TLS-terminating reverse proxy (nginx), through its hosts", needs, () => {
  test("two entries of three hosts; the real v2ray client carries a page through nginx's entry and the direct one", async () => {
    const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
    const inboundPort = await freePort();
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: inboundPort });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    const access = await grant(t, serverId, inbound.id, { name: "behind nginx" });
    assert.equal(access.sync_state, "synced", String(access.sync_error));
    const proxyPort = await freePort();
    const { caFile, child } = await startNginx(proxyPort, inboundPort);

    const hosts = `/api/servers/${serverId}/inbounds/${inbound.id}/hosts`;
    for (const body of [
      {
        address: "127.0.0.1",
        port: proxyPort,
        remark: "via nginx",
        security: "tls",
        sni: ["cdn.test"],
        host: ["cdn.test"],
        alpn: ["http/1.1"],
      },
      { address: "127.0.0.1", remark: "direct" },
      { address: "192.0.2.1", remark: "disabled", is_disabled: true },
    ]) {
      const res = await request(t, "POST", hosts, body);
      assert.equal(res.statusCode, 201, res.body);
    }

    const links = await subscriptionLinks(t, access.user_id);
    assert.equal(links.length, 2, links.join("\n"));
    const [viaProxy, direct] = links.map(decodeLink);
    assert.ok(viaProxy?.protocol === "vless" && direct?.protocol === "vless");
    assert.equal(viaProxy.remark, "via nginx");
    assert.equal(viaProxy.port, proxyPort);
    assert.deepEqual(viaProxy.security, { type: "tls", sni: "cdn.test", alpn: ["http/1.1"] });
    assert.ok(viaProxy.transport.type === "ws" && viaProxy.transport.host === "cdn.test");
    assert.equal(direct.remark, "direct");
    assert.equal(direct.port, inboundPort);
    assert.equal(direct.security.type, "none");

    const throughProxy = await startClient(stack.add, "v2ray", viaProxy, caFile);
    await expectCarries(throughProxy, httpPort, BODY, "v2ray through nginx's TLS");
    const straight = await startClient(stack.add, "v2ray", direct);
    await expectCarries(straight, httpPort, BODY, "v2ray to the inbound directly");
    assert.equal(child.exitCode, null, "nginx still runs");
    assert.ok(core.isAlive(), "the core survived");
  });
});
