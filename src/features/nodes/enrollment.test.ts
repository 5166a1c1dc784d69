// Enrollment and mutual TLS between a panel and a node agent on loopback, with the real v2ray core:
// a join string works once; the panel then reaches the core only through the agent (TLS 1.3, both
// certificates checked); nothing else gets through the agent's listener; re-enrolling revokes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { networkInterfaces } from "node:os";
import { describe, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  enroll,
  joinedNode,
  joinNode,
  listenPanel,
  type NodeFixture,
  startAgent,
} from "../../../test/support/node-agent.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, tempDir } from "../../../test/support/v2ray.ts";
import {
  createAuthority,
  issueKeyAndCertificate,
  makeKeyAndRequest,
  PANEL_CLIENT_NAME,
} from "../../lib/node-pki.ts";
import type { NodeAgent } from "../../node/agent.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let panelUrl: string;
let node: NodeFixture;
let agent: NodeAgent;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  panelUrl = await listenPanel(t);
  node = await joinedNode(t, stack.add, panelUrl);
  agent = await startAgent(stack.add, node);
});
needs.after(() => stack.run());

/** A TLS handshake (and one request) to the agent with the given client identity: "ok" or why not. */
function handshake(identity: { cert?: string; key?: string }): Promise<string> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: node.agentPort,
      rejectUnauthorized: false,
      minVersion: "TLSv1.3",
      ...identity,
    });
    socket.setTimeout(5000, () => socket.destroy(new Error("timeout")));
    socket.once("secureConnect", () => {
      socket.write("GET /v1/status HTTP/1.1\r\nhost: agent\r\nconnection: close\r\n\r\n");
    });
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString();
    });
    // TLS 1.3 checks the client's certificate after the client's last flight: a refused client sees
    // the alert (or the close) instead of any HTTP answer.
    socket.once("end", () =>
      resolve(
        /^HTTP\/1\.1 200/.test(data)
          ? "ok"
          : data === ""
            ? "refused: closed"
            : `answered ${data.split("\r\n")[0]}`,
      ),
    );
    socket.once("error", (error) => resolve(`refused: ${error.message}`));
  });
}

describe("a node agent enrolled with a join string", needs, () => {
  test("the panel reaches the core through the agent: /test, the agent's report", async () => {
    const tested = await request(t, "POST", `/api/servers/${node.serverId}/test`);
    assert.equal(tested.statusCode, 200);
    assert.equal(tested.json().connected, true, tested.json().error);
    assert.equal(tested.json().wire_layout, "v2ray-4");
    const report = await request(t, "GET", `/api/servers/${node.serverId}/node`);
    assert.equal(report.statusCode, 200, report.body);
    assert.equal(report.json().core.flavor, "v2ray");
    assert.match(report.json().core.version, /^4\./);
    assert.equal(report.json().core.running, true);
  });

  test("a join string works once: the second use is refused, by the CLI and by the API", async () => {
    const server = await request(t, "POST", "/api/servers", {
      name: "once",
      hostname: "127.0.0.1",
      grpc_port: 1,
      connection: "node",
    });
    const joinString = await enroll(t, server.json().id);
    const first = await joinNode(joinString, tempDir(stack.add), panelUrl);
    assert.equal(first.code, 0, first.stderr);
    const second = await joinNode(joinString, tempDir(stack.add), panelUrl);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /refused the join \(401\)/);
    assert.doesNotMatch(
      second.stderr,
      new RegExp(JSON.parse(Buffer.from(joinString.slice(5), "base64url").toString()).t),
    );
  });

  test("a certificate request that does not verify leaves the join string usable; once joined, it is spent", async () => {
    const server = await request(t, "POST", "/api/servers", {
      name: "bad-csr",
      hostname: "127.0.0.1",
      grpc_port: 1,
      connection: "node",
    });
    const joinString = await enroll(t, server.json().id);
    const token = JSON.parse(Buffer.from(joinString.slice(5), "base64url").toString()).t as string;
    const { csrPem } = await makeKeyAndRequest("portcullis-node bad-csr");
    // One byte of the signed request changed: it parses, but its signature no longer verifies.
    const body = csrPem.split("\n").slice(1, -2).join("");
    const der = Buffer.from(body, "base64");
    der[der.length - 80] = (der[der.length - 80] ?? 0) ^ 0x01;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`;
    for (const csr of ["not a certificate request", tampered]) {
      const res = await t.app.inject({ method: "POST", url: "/api/node-join", payload: { token, csr } });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, "csr_invalid");
    }
    const certificates = () =>
      t.deps.database.db
        .selectFrom("node_certificates")
        .select("fingerprint")
        .where("server_id", "=", server.json().id)
        .execute();
    assert.deepEqual(await certificates(), [], "no certificate recorded for a refused request");
    const joined = await joinNode(joinString, tempDir(stack.add), panelUrl);
    assert.equal(joined.code, 0, joined.stderr);
    assert.equal((await certificates()).length, 1);
    const replay = await t.app.inject({
      method: "POST",
      url: "/api/node-join",
      payload: { token, csr: csrPem },
    });
    assert.equal(replay.statusCode, 401, replay.body);
    assert.equal(replay.json().code, "join_token_invalid");
  });

  test("a direct server gets no join string", async () => {
    const server = await request(t, "POST", "/api/servers", { name: "direct-one", hostname: "127.0.0.1" });
    const res = await request(t, "POST", `/api/servers/${server.json().id}/node-enrollment`);
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, "server_not_node");
  });

  test("the listener refuses no certificate, another CA, an expired one, and an agent's own", async () => {
    assert.match(await handshake({}), /refused/);
    const other = await createAuthority();
    const foreign = await issueKeyAndCertificate({
      authority: other,
      commonName: PANEL_CLIENT_NAME,
      role: "client",
      validityDays: 30,
    });
    assert.match(await handshake({ cert: foreign.certPem, key: foreign.keyPem }), /refused/);
    const authority = await t.deps.database.db
      .selectFrom("node_authority")
      .selectAll()
      .executeTakeFirstOrThrow();
    const ca = { certPem: authority.ca_cert, keyPem: t.deps.secretBox.open(authority.ca_key_sealed) };
    const expired = await issueKeyAndCertificate({
      authority: ca,
      commonName: PANEL_CLIENT_NAME,
      role: "client",
      validityDays: 1,
      now: new Date(Date.now() - 3 * 86_400_000),
    });
    assert.match(await handshake({ cert: expired.certPem, key: expired.keyPem }), /refused/);
    // An agent's certificate (same CA, server usage) cannot call another agent.
    const pair = readFileSync(`${node.dir}/agent.pem`, "utf8");
    const agentCert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pair)?.[0] ?? "";
    const agentKey = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/.exec(pair)?.[0] ?? "";
    assert.match(await handshake({ cert: agentCert, key: agentKey }), /refused|answered HTTP\/1\.1 403/);
    // The panel's own certificate works (the control).
    const client = { cert: authority.client_cert, key: t.deps.secretBox.open(authority.client_key_sealed) };
    assert.equal(await handshake(client), "ok");
  });

  test("TLS below 1.3 is refused", async () => {
    const result = await new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: "127.0.0.1",
        port: node.agentPort,
        rejectUnauthorized: false,
        maxVersion: "TLSv1.2",
      });
      socket.once("secureConnect", () => resolve("ok"));
      socket.once("error", (error) => resolve(error.message));
    });
    assert.notEqual(result, "ok");
  });

  test("the core's API listens on 127.0.0.1 only", async () => {
    const config = JSON.parse(readFileSync(`${node.dir}/core-config.json`, "utf8"));
    const api = config.inbounds.find((inbound: { tag: string }) => inbound.tag === "api");
    assert.equal(api.listen, "127.0.0.1");
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && !i.internal && i.family === "IPv4");
    if (external === undefined) return; // no other address on this host to try from
    const reached = await new Promise<boolean>((resolve) => {
      const socket = netConnect({ host: external.address, port: api.port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    assert.equal(reached, false, `the API answered on ${external.address}`);
  });

  test("re-enrolling revokes the old certificate: the panel refuses the old agent", async () => {
    const before = await request(t, "POST", `/api/servers/${node.serverId}/test`);
    assert.equal(before.json().connected, true);
    const joined = await joinNode(await enroll(t, node.serverId), tempDir(stack.add), panelUrl);
    assert.equal(joined.code, 0, joined.stderr);
    const after = await request(t, "POST", `/api/servers/${node.serverId}/test`);
    assert.equal(after.json().connected, false);
    assert.match(after.json().error, /not the one enrolled|TLS refused/);
    assert.ok(agent.port > 0);
  });
});
