// A node agent whose core answers its read with reset late (issue 52), against the real v2ray core and
// a real v2ray client: the core is stopped (SIGSTOP) for longer than the agent's ordinary 10 s deadline
// to its core while the agent's read is in flight. The panel's collections meanwhile succeed (with
// nothing new) instead of waiting on the stuck read, and once the core resumes, its answer is
// journaled by the agent and counted by the panel exactly once: the user's total is what the core
// counted, read without reset before the stop. And an agent whose read of the inbound counters fails
// after it read (and reset) the users' keeps the users' bytes.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { type UserBytes as Bytes, settledUserBytes } from "../../../test/support/core-counters.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  type AccessBody,
  createInbound,
  expectCarries,
  grant,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer } from "../../../test/support/v2ray.ts";
import type { CoreRelay } from "../../cores/core-relay.ts";
import type { NodeAgent } from "../../node/agent.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = Buffer.alloc(200 * 1024, 9);
/** The agent's deadline of its other core calls (core-relay.ts): the stop lasts longer. */
const AGENT_CALL_TIMEOUT_MS = 10_000;
let t: TestApp;
let node: NodeFixture;
let agent: NodeAgent;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  node = await joinedNode(t, stack.add, await listenPanel(t));
  // No reads of its own in this test: the panel's collections and harvest() below are the only ones.
  agent = await startAgent(stack.add, node, { trafficIntervalMs: 3_600_000 });
});
needs.after(() => stack.run());

async function usage(userId: string): Promise<Bytes> {
  const body = (await request(t, "GET", `/api/users/${userId}/usage`)).json();
  return { uplink_bytes: body.uplink_bytes, downlink_bytes: body.downlink_bytes };
}

/** The core's counters for the user, read WITHOUT reset through the agent, once they settled. */
async function countedOnCore(email: string): Promise<Bytes> {
  const { client } = await t.deps.services.sync.connect(node.serverId);
  return settledUserBytes(client, email, BODY.length);
}

/**
 * A user on a new inbound of the node whose real client carried BODY through it; `expected`: what the
 * core counted for them, read without reset once settled.
 */
async function carriedThroughNode(name: string): Promise<{ access: AccessBody; expected: Bytes }> {
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, node.serverId, { template_id: template.id, port: await freePort() });
  const access = await grant(t, node.serverId, inbound.id, { name });
  assert.equal(access.sync_state, "synced", String(access.sync_error));
  const [link] = await subscriptionLinks(t, access.user_id);
  const socksPort = await startClient(stack.add, "v2ray", decodeLink(link ?? ""));
  const httpPort = await startHttpServer(stack.add, BODY);
  await expectCarries(socksPort, httpPort, BODY, "the client through the node");
  return { access, expected: await countedOnCore(access.proxy_user_id) };
}

/** The panel collects until the user's bytes arrive, once more, and then holds exactly `expected`. */
async function countedExactlyOnce(access: AccessBody, expected: Bytes, what: string): Promise<void> {
  await waitFor(
    async () => {
      await t.deps.services.traffic.collect(node.serverId);
      return (await usage(access.user_id)).downlink_bytes > 0;
    },
    { timeoutMs: 30_000, what },
  );
  await t.deps.services.traffic.collect(node.serverId);
  assert.deepEqual(await usage(access.user_id), expected, "exactly what the core counted, once");
}

describe("a node agent's late read with reset", needs, () => {
  test("a core stopped past the agent's ordinary deadline while it is read: the panel's collections go on, and its bytes are counted exactly once after it resumes", async () => {
    const { access, expected } = await carriedThroughNode("late-harvest");

    const pid = (agent.status().core as { pid: number | null }).pid;
    assert.ok(pid !== null, "the agent's core runs");
    process.kill(pid, "SIGSTOP");
    try {
      const stoppedAtMs = Date.now();
      const harvesting = agent.harvest(); // in flight until the core answers
      let collections = 0;
      // Back to back (each waits at most the agent's 3 s for its read) until the stop outlasts the
      // agent's ordinary deadline to its core.
      while (Date.now() - stoppedAtMs <= AGENT_CALL_TIMEOUT_MS + 1000) {
        const collected = await t.deps.services.traffic.collect(node.serverId);
        assert.deepEqual(collected, { users: 0, inbounds: 0 }, "nothing new while the core is stopped");
        collections += 1;
      }
      assert.ok(collections >= 2, `${collections} collections while the core was stopped`);
      assert.equal(agent.harvest(), harvesting, "the stuck read is not started again");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await countedExactlyOnce(
      access,
      expected,
      "the late answer journaled by the agent and counted by the panel",
    );
  });

  test("the inbound counters' read fails after the users' read: the users' bytes, reset on the core already, are journaled and counted exactly once", async (ctx) => {
    const { access, expected } = await carriedThroughNode("inbound-read-fails");

    // The agent's own relay to its core, its inbound counters' read failing once (no real core fails
    // on cue); the users' read before it goes to the real core and resets the user's counters there.
    const relay = (agent as unknown as { supervisor: { relay: CoreRelay } }).supervisor.relay;
    const call = relay.call.bind(relay);
    let failed = 0;
    const injected = ctx.mock.method(relay, "call", (path: string, request: Uint8Array, extraMs?: number) => {
      if (path.endsWith("/QueryStats") && Buffer.from(request).includes("inbound>>>")) {
        failed += 1;
        return Promise.resolve({
          ok: false as const,
          code: 14,
          details: "injected: the inbound read failed",
        });
      }
      return call(path, request, extraMs);
    });
    await agent.harvest();
    injected.mock.restore();
    assert.equal(failed, 1, "the inbound counters' read was tried once, and failed");
    // The core reset the user's counters with that read: what the panel counts now can only come from
    // the agent's journal.
    await countedExactlyOnce(
      access,
      expected,
      "the users' bytes journaled by the agent and counted by the panel",
    );
  });
});
