// Through a node agent with the real v2ray core and a real v2ray client: a user's source address is
// online within one traffic interval of connecting (GET /api/users/{id}/online and
// /api/servers/{id}/online), and a client in the middle of a long download is cut within 5 s of its
// user being disabled (the agent destroys the sockets the access log attributes to the user; ss -K
// needs CAP_NET_ADMIN, which this test has as root), and cannot reconnect.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { connect } from "node:net";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { startConvergence } from "../../../test/support/convergence.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  expectBlocked,
  expectCarries,
  grant,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray", "ss");
const stack = new CleanupStack();
const BODY = Buffer.alloc(16 * 1024, 1);
const TRAFFIC_INTERVAL_MS = 500;
let t: TestApp;
let node: NodeFixture;
let httpPort: number;
let streamPort: number;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  node = await joinedNode(t, stack.add, await listenPanel(t));
  await startAgent(stack.add, node, { trafficIntervalMs: TRAFFIC_INTERVAL_MS });
  httpPort = await startHttpServer(stack.add, BODY);
  // An endless download: 16 KiB every 20 ms until the connection goes.
  const stream = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/octet-stream" });
    const timer = setInterval(() => response.write(BODY), 20);
    response.once("close", () => clearInterval(timer));
  });
  stream.listen(0, "127.0.0.1");
  await new Promise((resolve) => stream.once("listening", resolve));
  stack.add(() => {
    stream.closeAllConnections();
    return new Promise((resolve) => stream.close(resolve));
  });
  const address = stream.address();
  streamPort = typeof address === "object" && address !== null ? address.port : 0;
});
needs.after(() => stack.run());

/** Starts the endless download through SOCKS; resolves with how it ended, once it does. */
function longDownload(socksPort: number): { received: () => number; ended: Promise<number> } {
  let received = 0;
  const socket = connect(socksPort, "127.0.0.1");
  let stage = 0;
  socket.on("connect", () => socket.write(Buffer.from([5, 1, 0])));
  socket.on("data", (chunk: Buffer) => {
    if (stage === 0) {
      stage = 1;
      socket.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, streamPort >> 8, streamPort & 0xff]));
    } else if (stage === 1) {
      stage = 2;
      socket.write("GET / HTTP/1.0\r\nhost: stream\r\n\r\n");
    } else received += chunk.length;
  });
  stack.add(() => socket.destroy());
  const ended = new Promise<number>((resolve) => {
    socket.once("close", () => resolve(Date.now()));
  });
  return { received: () => received, ended };
}

async function provisionUser(name: string) {
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, node.serverId, { template_id: template.id, port: await freePort() });
  const access = await grant(t, node.serverId, inbound.id, { name });
  assert.equal(access.sync_state, "synced", String(access.sync_error));
  const [link] = await subscriptionLinks(t, access.user_id);
  const socksPort = await startClient(stack.add, "v2ray", decodeLink(link ?? ""));
  return { access, socksPort };
}

describe("a node agent watching connections", needs, () => {
  test("a user's source address is online within one traffic interval of connecting", async () => {
    const { access, socksPort } = await provisionUser("online");
    const before = await request(t, "GET", `/api/users/${access.user_id}/online`);
    assert.equal(before.statusCode, 200, before.body);
    await expectCarries(socksPort, httpPort, BODY, "the client");
    const connectedAt = Date.now();
    const online = await waitFor(
      async () => {
        const res = await request(t, "GET", `/api/users/${access.user_id}/online`);
        const body = res.json() as { addresses: { ip: string; server_id: string }[] };
        return body.addresses.length > 0 ? body : false;
      },
      { timeoutMs: TRAFFIC_INTERVAL_MS + 2000, intervalMs: 50, what: "the user online" },
    );
    assert.ok(Date.now() - connectedAt <= TRAFFIC_INTERVAL_MS + 2000);
    assert.equal(online.addresses[0]?.ip, "127.0.0.1");
    assert.equal(online.addresses[0]?.server_id, node.serverId);
    const byServer = await request(t, "GET", `/api/servers/${node.serverId}/online`);
    assert.equal(byServer.statusCode, 200, byServer.body);
    const entry = (
      byServer.json() as { users: { user_id: string; addresses: { ip: string }[] }[] }
    ).users.find((u) => u.user_id === access.user_id);
    assert.equal(entry?.addresses[0]?.ip, "127.0.0.1");
  });

  test("a long download is cut within 5 s of its user being disabled, and cannot reconnect", async () => {
    const { access, socksPort } = await provisionUser("cut");
    await expectCarries(socksPort, httpPort, BODY, "the client");
    const download = longDownload(socksPort);
    await waitFor(() => download.received() > 256 * 1024, { what: "the long download under way" });
    // The stream server writes every 20 ms: a second without a byte means the proxy connection is
    // gone. (The v2ray client keeps its local SOCKS socket open after its upstream is reset, so the
    // test watches the bytes, not only the socket.)
    let lastByteAt = Date.now();
    let lastCount = download.received();
    // The reconciler, as `serve` runs it: a status change wakes it, and it removes the user.
    const { running } = startConvergence(t.deps, t.deps.logger, { reconcileMs: 3000 });
    stack.add(() => running.stop());
    const disabledAt = Date.now();
    const res = await request(t, "PUT", `/api/users/${access.user_id}`, { status: "disabled" });
    assert.equal(res.statusCode, 200, res.body);
    await waitFor(
      () => {
        const count = download.received();
        if (count !== lastCount) {
          lastCount = count;
          lastByteAt = Date.now();
        }
        return Date.now() - lastByteAt >= 1000;
      },
      { timeoutMs: 7000, intervalMs: 20, what: "the download cut (no byte for a second)" },
    );
    assert.ok(
      lastByteAt - disabledAt <= 5000,
      `the last byte came ${lastByteAt - disabledAt} ms after the user was disabled`,
    );
    await expectBlocked(socksPort, httpPort, BODY, "the disabled user's client");
  });
});
