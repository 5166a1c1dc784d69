// Clients other than v2ray through inbounds the client created: Debian's ss-local
// (shadowsocks-libev) and trojan (certificate verified) carry real traffic, counted per user.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../../test/support/poll.ts";
import { freePorts } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import {
  API_TAG,
  type Cert,
  CleanupStack,
  fetchViaSocks,
  makeCert,
  startClientProcess,
  startHttpServer,
  startV2rayServer,
  tempDir,
  type V2rayServer,
} from "../../test/support/v2ray.ts";
import { GrpcCoreClient } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";

const needs = requires("v2ray", "ss-local", "trojan", "openssl");

const BODY = Buffer.alloc(64_000, "portcullis");

describe("Debian ss-local and trojan clients through API-created inbounds", needs, () => {
  const stack = new CleanupStack();
  after(() => stack.run());
  let server: V2rayServer;
  let client: GrpcCoreClient;
  let httpPort = 0;
  let cert: Cert;

  before(async () => {
    server = await startV2rayServer(stack.add);
    client = new GrpcCoreClient({ address: server.apiAddress, protectedTags: [API_TAG] });
    stack.add(() => client.close());
    cert = makeCert(tempDir(stack.add), "proxy");
    httpPort = await startHttpServer(stack.add, BODY);
  });

  async function expectCounted(email: string): Promise<void> {
    const downlink = await waitFor(
      async () => {
        const counters = await client.queryStats(`user>>>${email}>>>traffic>>>downlink`, false);
        const value = counters[0]?.value ?? 0n;
        return value >= BigInt(BODY.length) && value;
      },
      { timeoutMs: 5000, what: `${email} downlink` },
    );
    assert.ok(downlink < BigInt(BODY.length + 1000), `${email} downlink ${downlink}`);
  }

  for (const method of ["aes-128-gcm", "chacha20-ietf-poly1305"]) {
    test(`ss-local ${method}`, async () => {
      const [port = 0, socksPort = 0] = await freePorts(2);
      const email = `ss-local-${method}@t`;
      const settings = { method, clients: [{ email, password: `pw-${method}` }] };
      const built = buildInbound(
        { tag: `deb-${method}`, port, listen: "127.0.0.1", protocol: "shadowsocks", settings },
        "v2ray",
      );
      assert.ok(built.ok, JSON.stringify(built));
      await client.addInbound(built.value);
      const config = {
        server: "127.0.0.1",
        server_port: port,
        local_address: "127.0.0.1",
        local_port: socksPort,
        password: `pw-${method}`,
        method,
        timeout: 60,
      };
      await startClientProcess(stack.add, "ss-local", (path) => ["-c", path], config, [socksPort]);
      const response = await fetchViaSocks(socksPort, { port: httpPort, path: "/" });
      assert.equal(response.status, 200);
      assert.ok(response.body.equals(BODY));
      await expectCounted(email);
      assert.ok(server.isAlive());
    });
  }

  test("trojan 1.16 with certificate verification, user added through AlterInbound", async () => {
    const [port = 0, socksPort = 0] = await freePorts(2);
    const tls = {
      security: "tls",
      tlsSettings: { certificates: [{ certificate: cert.certPem, key: cert.keyPem }] },
    };
    const json = {
      tag: "deb-trojan",
      port,
      listen: "127.0.0.1",
      protocol: "trojan",
      settings: { clients: [] },
      streamSettings: tls,
    };
    const built = buildInbound(json, "v2ray");
    assert.ok(built.ok, JSON.stringify(built));
    await client.addInbound(built.value);
    const user = buildUser("trojan", "v2ray", { email: "trojan-deb@t", credential: "trojan-deb-pass" });
    assert.ok(user.ok);
    await client.addUser(built.value.ref, user.value);
    const config = {
      run_type: "client",
      local_addr: "127.0.0.1",
      local_port: socksPort,
      remote_addr: "127.0.0.1",
      remote_port: port,
      password: ["trojan-deb-pass"],
      log_level: 2,
      ssl: {
        verify: true,
        verify_hostname: true,
        cert: cert.certPath,
        sni: "localhost",
        alpn: ["h2", "http/1.1"],
      },
    };
    await startClientProcess(stack.add, "trojan", (path) => ["-c", path], config, [socksPort]);
    const response = await fetchViaSocks(socksPort, { port: httpPort, path: "/" });
    assert.equal(response.status, 200);
    assert.ok(response.body.equals(BODY));
    await expectCounted("trojan-deb@t");
    assert.ok(server.isAlive());
  });
});
