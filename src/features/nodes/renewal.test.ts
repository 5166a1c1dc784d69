// Renewal of a node agent's certificate without downtime, against a real agent running the real
// v2ray core: the agent's certificate is made due (its record says it ends tomorrow), the scheduled
// job (jobs/renew-node-certificates.ts) renews it while the panel keeps calling the core through the
// agent — every call answered — and afterwards the agent presents a new certificate, the panel
// accepts only it, and an endpoint presenting the old certificate is refused by the panel.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { renewNodeCertificatesJob } from "../../jobs/renew-node-certificates.ts";
import { fingerprintOf } from "../../lib/node-pki.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let node: NodeFixture;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  const panelUrl = await listenPanel(t);
  node = await joinedNode(t, stack.add, panelUrl);
  await startAgent(stack.add, node);
});
needs.after(() => stack.run());

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const PEM_KEY = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/;

async function connected(): Promise<{ connected: boolean; error: string | null }> {
  const res = await request(t, "POST", `/api/servers/${node.serverId}/test`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { connected: boolean; error: string | null };
}

async function accepted(): Promise<{ fingerprint: string; state: string }[]> {
  return t.deps.database.db
    .selectFrom("node_certificates")
    .select(["fingerprint", "state"])
    .where("server_id", "=", node.serverId)
    .execute();
}

describe("a node agent's certificate renewed by the scheduled job", needs, () => {
  test("renewed before expiry with every call answered; the old certificate is refused after", async () => {
    assert.equal((await connected()).connected, true);
    const oldPair = readFileSync(`${node.dir}/agent.pem`, "utf8");
    const oldCert = PEM_CERT.exec(oldPair)?.[0] ?? "";
    const oldKey = PEM_KEY.exec(oldPair)?.[0] ?? "";
    const oldFingerprint = fingerprintOf(oldCert);
    assert.deepEqual(await accepted(), [{ fingerprint: oldFingerprint, state: "current" }]);

    // A client made before the renewal (it accepts only the old certificate), as a request that read the
    // server just before the swap holds: used after it, it must still reach the agent.
    const stale = await t.deps.services.servers.clientOf(node.serverId);
    await stale.getSysStats();

    const job = renewNodeCertificatesJob({
      nodes: t.deps.services.nodes,
      servers: t.deps.services.servers,
      leases: t.deps.leases,
      logger: testLogger(),
    });
    await t.deps.leases.claim([node.serverId]);
    // Not due (90 days left): the job leaves it alone.
    await job.run({ signal: new AbortController().signal });
    assert.deepEqual(await accepted(), [{ fingerprint: oldFingerprint, state: "current" }]);

    // Due: its record says it ends tomorrow (the renewal reads the record, as it does after 60 days).
    await t.deps.database.db
      .updateTable("node_certificates")
      .set({ not_after: new Date(Date.now() + 86_400_000).toISOString() })
      .where("server_id", "=", node.serverId)
      .execute();
    // The panel keeps calling the core through the agent all along: no call may fail.
    let calling = true;
    const answers: boolean[] = [];
    const failures: string[] = [];
    const caller = (async () => {
      while (calling) {
        const answer = await connected();
        answers.push(answer.connected);
        if (!answer.connected) failures.push(answer.error ?? "not connected");
      }
    })();
    try {
      await job.run({ signal: new AbortController().signal });
      // A few calls after the swap, on the new certificate.
      const after = answers.length;
      while (answers.length < after + 3) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      calling = false;
      await caller;
    }
    assert.ok(answers.length >= 4, `calls during the renewal: ${answers.length}`);
    // Before close() let calls in flight finish, some failed here with "socket hang up".
    assert.deepEqual(failures, [], "every call through the agent was answered");

    const newPair = readFileSync(`${node.dir}/agent.pem`, "utf8");
    const newCert = PEM_CERT.exec(newPair)?.[0] ?? "";
    const newFingerprint = fingerprintOf(newCert);
    assert.notEqual(newFingerprint, oldFingerprint, "the agent holds a new certificate");
    assert.notEqual(PEM_KEY.exec(newPair)?.[0], oldKey, "and a new key, made on the host");
    assert.deepEqual(await accepted(), [{ fingerprint: newFingerprint, state: "current" }]);
    const status = await request(t, "GET", `/api/servers/${node.serverId}/node`);
    assert.equal(status.statusCode, 200, status.body);
    assert.equal(
      (status.json() as { certificate: { fingerprint: string } }).certificate.fingerprint,
      newFingerprint,
    );
    assert.equal((await connected()).connected, true);
    // The stale client meets the new certificate on a new handshake: it checks the stored list again
    // (which now holds only the new one) instead of refusing the agent.
    assert.ok((await stale.getSysStats()).uptimeSeconds >= 0);

    // An endpoint presenting the old certificate (and its key) where the agent was: refused.
    const impostor: TlsServer = createTlsServer({
      cert: oldCert,
      key: oldKey,
      minVersion: "TLSv1.3",
      requestCert: false,
    });
    impostor.on("secureConnection", (socket) => socket.destroy());
    impostor.on("tlsClientError", () => {});
    await new Promise<void>((resolve) => impostor.listen(0, "127.0.0.1", resolve));
    stack.add(() => new Promise<void>((resolve) => impostor.close(() => resolve())));
    const address = impostor.address();
    assert.ok(typeof address === "object" && address !== null);
    const moved = await request(t, "PUT", `/api/servers/${node.serverId}`, { grpc_port: address.port });
    assert.equal(moved.statusCode, 200, moved.body);
    const refused = await connected();
    assert.equal(refused.connected, false);
    assert.match(refused.error ?? "", /not the one enrolled|TLS refused/);
    const back = await request(t, "PUT", `/api/servers/${node.serverId}`, { grpc_port: node.agentPort });
    assert.equal(back.statusCode, 200, back.body);
    assert.equal((await connected()).connected, true);
  });
});
