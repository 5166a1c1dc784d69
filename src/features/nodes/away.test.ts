// Serving on while the panel is away, against the real v2ray core and a real v2ray client through a
// node agent: the client keeps carrying traffic with no panel calls for 60 s; the core killed
// meanwhile is restarted and re-applied by the agent, carrying again within 5 s; the agent itself
// restarted keeps its journal; when the panel collects again, the bytes moved are in the user's
// usage once (within 1 % of what the client received), also when an acknowledgement was lost and
// the batches came twice, and collecting again adds nothing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  expectCarries,
  grant,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, fetchViaSocks, startHttpServer } from "../../../test/support/v2ray.ts";
import type { NodeAgent } from "../../node/agent.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = Buffer.alloc(256 * 1024, 7);
let t: TestApp;
let node: NodeFixture;
let agent: NodeAgent;
let httpPort: number;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  const panelUrl = await listenPanel(t);
  node = await joinedNode(t, stack.add, panelUrl);
  agent = await startAgent(stack.add, node, { trafficIntervalMs: 300 });
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(() => stack.run());

/** One download through the client; the bytes received, or 0 when it failed. */
async function download(socksPort: number): Promise<number> {
  try {
    const res = await fetchViaSocks(socksPort, { port: httpPort, path: "/" }, 3000);
    return res.status === 200 && res.body.equals(BODY) ? res.body.length : 0;
  } catch {
    return 0;
  }
}

async function downlinkOf(userId: string): Promise<number> {
  const res = await request(t, "GET", `/api/users/${userId}/usage`);
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { downlink_bytes: number }).downlink_bytes;
}

describe("a node serving on while the panel is away", needs, () => {
  test("traffic flows, the core comes back by itself, and every byte is counted once", async () => {
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, node.serverId, {
      template_id: template.id,
      port: await freePort(),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    const access = await grant(t, node.serverId, inbound.id, { name: "away" });
    assert.equal(access.sync_state, "synced", String(access.sync_error));
    const [link] = await subscriptionLinks(t, access.user_id);
    const socksPort = await startClient(stack.add, "v2ray", decodeLink(link ?? ""));
    await expectCarries(socksPort, httpPort, BODY, "the client through the node");
    let received = BODY.length; // expectCarries' successful download

    // The panel goes away: no call reaches the agent from here on, and its connections are dropped.
    t.deps.cores.closeAll();
    const awayUntil = Date.now() + 60_000;
    while (Date.now() < awayUntil) {
      const bytes = await download(socksPort);
      assert.equal(bytes, BODY.length, "every download while the panel is away succeeds");
      received += bytes;
    }

    // The core killed while the panel is away: the agent restarts it and re-applies the inbound and user.
    await agent.harvest(); // what the core counted so far is in the journal (a SIGKILL loses the rest)
    const restartsBefore = agent.core.report().restarts;
    const killedAt = Date.now();
    process.kill(agent.core.report().pid ?? 0, "SIGKILL");
    const back = await waitFor(
      async () => ((await download(socksPort)) === BODY.length ? Date.now() : false),
      {
        timeoutMs: 5000,
        intervalMs: 50,
        what: "traffic again after the core was killed",
      },
    );
    received += BODY.length;
    assert.ok(back - killedAt <= 5000, `carrying again after ${back - killedAt} ms`);
    assert.equal(agent.core.report().restarts, restartsBefore + 1);
    for (let i = 0; i < 10; i += 1) received += await download(socksPort);

    // The agent restarted as well: its journal and desired state survive on disk.
    await agent.stop();
    agent = await startAgent(stack.add, node, { trafficIntervalMs: 300 });
    await expectCarries(socksPort, httpPort, BODY, "the client after the agent restarted");
    received += BODY.length;
    for (let i = 0; i < 10; i += 1) received += await download(socksPort);
    await agent.harvest();

    // The panel is back. Its first collection loses the acknowledgement: the batches stay on the
    // agent and come again with the next collection, which must not count them twice.
    const client = await t.deps.services.servers.clientOf(node.serverId);
    const realLink = client.agentLink?.bind(client);
    client.agentLink = () => {
      const link = realLink?.();
      if (link === null || link === undefined) return null;
      return {
        json: <T>(method: "GET" | "POST" | "PUT", name: string, body?: unknown) =>
          name === "traffic-ack"
            ? Promise.reject(new Error("acknowledgement lost"))
            : link.json<T>(method, name, body),
      };
    };
    await assert.rejects(t.deps.services.traffic.collect(node.serverId), /acknowledgement lost/);
    client.agentLink = realLink;
    await t.deps.services.traffic.collect(node.serverId);
    const counted = await downlinkOf(access.user_id);
    assert.ok(
      Math.abs(counted - received) <= received * 0.01,
      `counted ${counted}, the client received ${received}`,
    );
    await t.deps.services.traffic.collect(node.serverId);
    assert.equal(await downlinkOf(access.user_id), counted, "a second collection adds nothing");
  });
});
