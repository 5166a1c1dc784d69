// The attack suite of the node agent's listener and the join (issue 47), against a real agent running
// the real v2ray core, enrolled with a panel on loopback: a client with no certificate, one from
// another CA, an expired one, garbage bytes (random, plaintext HTTP, HTTP/2's preface, a ClientHello
// left half-sent) — none gets an HTTP answer and the agent keeps serving the panel; a spent join
// string is refused, and eight concurrent spends of one join string give exactly one certificate.
// Last, the agent's log lines and the panel's log files hold no join string, token, key or bearer.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import {
  createAuthority,
  fingerprintOf,
  issueKeyAndCertificate,
  makeKeyAndRequest,
  PANEL_CLIENT_NAME,
} from "../../src/lib/node-pki.ts";
import { NodeAgent } from "../../src/node/agent.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { enroll, joinNode, LOOPBACK_BASE, listenPanel } from "../support/node-agent.ts";
import { waitFor } from "../support/poll.ts";
import { freePort } from "../support/ports.ts";
import { registerServer } from "../support/provisioning.ts";
import { requires } from "../support/requires.ts";
import { request } from "../support/templates.ts";
import { CleanupStack, tempDir } from "../support/v2ray.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let panelUrl: string;
let serverId: string;
let agentPort: number;
let agentDir: string;
let agent: NodeAgent;
let logDir: string;
const agentLog: string[] = [];
/** Every join string made here: none may reach a log. */
const joinStrings: string[] = [];

const tokenOf = (joinString: string): string =>
  (JSON.parse(Buffer.from(joinString.slice(5), "base64url").toString()) as { t: string }).t;

needs.before(async () => {
  // The panel logs into a directory of this test's own, read back by the secret scan below.
  logDir = mkdtempSync(join(tmpdir(), "portcullis-node-attack-logs-"));
  stack.add(() => rmSync(logDir, { recursive: true, force: true }));
  const previous = process.env.PORTCULLIS_TEST_LOG_DIR;
  process.env.PORTCULLIS_TEST_LOG_DIR = logDir;
  try {
    t = await createTestApp();
  } finally {
    if (previous === undefined) delete process.env.PORTCULLIS_TEST_LOG_DIR;
    else process.env.PORTCULLIS_TEST_LOG_DIR = previous;
  }
  stack.add(() => t.close());
  panelUrl = await listenPanel(t);
  agentPort = await freePort();
  serverId = (await registerServer(t, agentPort, { connection: "node" })).id;
  const base = await request(t, "PUT", `/api/servers/${serverId}/node-base`, { document: LOOPBACK_BASE });
  assert.equal(base.statusCode, 200, base.body);
  agentDir = tempDir(stack.add);
  const joinString = await enroll(t, serverId);
  joinStrings.push(joinString);
  const joined = await joinNode(joinString, agentDir, panelUrl);
  assert.equal(joined.code, 0, joined.stderr);
  agent = new NodeAgent({
    dir: agentDir,
    host: "127.0.0.1",
    port: agentPort,
    coreBinary: "v2ray",
    coreApiPort: await freePort(),
    backoff: { initialMs: 50, maxMs: 500 },
    trafficIntervalMs: 500,
    log: (message, fields) => agentLog.push(JSON.stringify({ message, ...fields })),
  });
  stack.add(() => agent.stop());
  await agent.start();
});
needs.after(() => stack.run());

/** The panel reaches its core through the agent (the agent survived what came before). */
async function panelStillServed(): Promise<void> {
  await waitFor(
    async () => {
      const res = await request(t, "POST", `/api/servers/${serverId}/test`);
      return (res.json() as { connected: boolean }).connected;
    },
    { timeoutMs: 15_000, what: "the panel reaching the core through the agent" },
  );
}

/** A TLS handshake and one request with the given identity: "ok", or why there was no answer. */
function handshake(identity: { cert?: string; key?: string }): Promise<string> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: agentPort,
      rejectUnauthorized: false,
      minVersion: "TLSv1.3",
      ...identity,
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error("timeout")));
    socket.once("secureConnect", () =>
      socket.write("GET /v1/status HTTP/1.1\r\nhost: agent\r\nconnection: close\r\n\r\n"),
    );
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString();
    });
    socket.once("end", () =>
      resolve(/^HTTP\/1\.1 200/.test(data) ? "ok" : data === "" ? "refused: closed" : `answered ${data}`),
    );
    socket.once("error", (error) => resolve(`refused: ${error.message}`));
  });
}

/** Raw bytes to the agent's port: what came back before it closed (or the deadline passed). */
function raw(bytes: Buffer, deadlineMs: number): Promise<{ reply: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = netConnect({ host: "127.0.0.1", port: agentPort });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ reply: Buffer.concat(chunks), closed: false });
    }, deadlineMs);
    socket.once("connect", () => socket.write(bytes));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.once("close", () => {
      clearTimeout(timer);
      resolve({ reply: Buffer.concat(chunks), closed: true });
    });
    socket.once("error", () => {});
  });
}

async function panelIdentity() {
  const authority = await t.deps.database.db
    .selectFrom("node_authority")
    .selectAll()
    .executeTakeFirstOrThrow();
  return {
    ca: { certPem: authority.ca_cert, keyPem: t.deps.secretBox.open(authority.ca_key_sealed) },
    client: { cert: authority.client_cert, key: t.deps.secretBox.open(authority.client_key_sealed) },
  };
}

function postJoin(token: string, csr: string): Promise<Response> {
  return fetch(`${panelUrl}/api/node-join`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token, csr }),
    signal: AbortSignal.timeout(20_000),
  });
}

describe("the node agent's listener and the join, attacked", needs, () => {
  test("no certificate, another CA's, an expired one: refused at the handshake; the panel's works", async () => {
    await panelStillServed();
    assert.match(await handshake({}), /^refused/);
    const other = await createAuthority();
    const foreign = await issueKeyAndCertificate({
      authority: other,
      commonName: PANEL_CLIENT_NAME,
      role: "client",
      validityDays: 30,
    });
    assert.match(await handshake({ cert: foreign.certPem, key: foreign.keyPem }), /^refused/);
    const { ca, client } = await panelIdentity();
    const expired = await issueKeyAndCertificate({
      authority: ca,
      commonName: PANEL_CLIENT_NAME,
      role: "client",
      validityDays: 1,
      now: new Date(Date.now() - 3 * 86_400_000),
    });
    assert.match(await handshake({ cert: expired.certPem, key: expired.keyPem }), /^refused/);
    assert.equal(await handshake(client), "ok", "the control: the panel's own certificate");
  });

  test("garbage on the port gets no HTTP answer and the agent keeps serving", async () => {
    const shapes: [string, Buffer][] = [
      ["random bytes", randomBytes(4096)],
      ["plaintext HTTP", Buffer.from("GET /v1/status HTTP/1.1\r\nhost: agent\r\n\r\n")],
      ["HTTP/2 preface", Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")],
      [
        "a TLS record header claiming 16 KiB, then nothing",
        Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00, 0x01]),
      ],
      ["zeros", Buffer.alloc(65_536)],
    ];
    const results = await Promise.all(shapes.map(([, bytes]) => raw(bytes, 25_000)));
    results.forEach((result, i) => {
      const name = shapes[i]?.[0];
      assert.ok(
        result.closed,
        `${name}: the agent closed the connection (the half-sent handshake within its 10 s)`,
      );
      assert.doesNotMatch(result.reply.toString("latin1"), /HTTP\//, `${name}: no HTTP answer`);
    });
    assert.ok(agent.core.report().running, "the core still runs");
    await panelStillServed();
  });

  test("a spent join string is refused, over HTTP, with the same answer as an unknown one", async () => {
    const [spent] = joinStrings;
    assert.ok(spent !== undefined);
    const { csrPem } = await makeKeyAndRequest("portcullis-node replay");
    const replay = await postJoin(tokenOf(spent), csrPem);
    assert.equal(replay.status, 401);
    const replayBody = (await replay.json()) as { code: string };
    assert.equal(replayBody.code, "join_token_invalid");
    const unknown = await postJoin(randomBytes(32).toString("base64url"), csrPem);
    assert.equal(unknown.status, 401);
    assert.equal(((await unknown.json()) as { code: string }).code, "join_token_invalid");
  });

  test("eight concurrent spends of one join string: exactly one certificate", async () => {
    const other = await registerServer(t, await freePort(), { connection: "node" });
    const joinString = await enroll(t, other.id);
    joinStrings.push(joinString);
    const token = tokenOf(joinString);
    const csrs = await Promise.all(
      Array.from({ length: 8 }, (_, i) => makeKeyAndRequest(`portcullis-node race ${i}`)),
    );
    const answers = await Promise.all(csrs.map(({ csrPem }) => postJoin(token, csrPem)));
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401, 401, 401]);
    const certificates = await t.deps.database.db
      .selectFrom("node_certificates")
      .select("fingerprint")
      .where("server_id", "=", other.id)
      .execute();
    assert.equal(certificates.length, 1, "one certificate on record for the server");
    const winner = answers.find((answer) => answer.status === 200);
    assert.ok(winner !== undefined);
    const { cert } = (await winner.json()) as { cert: string };
    assert.equal(certificates[0]?.fingerprint, fingerprintOf(cert), "the one on record is the winner's");
  });

  test("no join string, token, key or bearer in the agent's or the panel's logs", async () => {
    const { ca, client } = await panelIdentity();
    const agentKey = readFileSync(join(agentDir, "agent.pem"), "utf8");
    const keyBody = (pem: string) =>
      (/-----BEGIN [A-Z ]*PRIVATE KEY-----\s*([\s\S]+?)-----END/.exec(pem)?.[1] ?? "")
        .replace(/\s+/g, "")
        .slice(0, 40);
    const secrets = [
      ...joinStrings,
      ...joinStrings.map(tokenOf),
      t.token,
      keyBody(ca.keyPem),
      keyBody(client.key),
      keyBody(agentKey),
    ];
    for (const secret of secrets) assert.ok(secret.length >= 32, "each secret is long enough to search for");
    const panelLines = readdirSync(logDir).flatMap((name) =>
      readFileSync(join(logDir, name), "utf8")
        .split("\n")
        .filter((line) => line !== ""),
    );
    assert.ok(panelLines.length > 0, "the panel logged something to scan");
    assert.ok(agentLog.length > 0, "the agent logged something to scan");
    for (const line of [...panelLines, ...agentLog]) {
      assert.doesNotMatch(line, /PRIVATE KEY/);
      for (const secret of secrets)
        assert.ok(!line.includes(secret), `a secret in a log line: ${line.slice(0, 120)}`);
    }
  });
});
