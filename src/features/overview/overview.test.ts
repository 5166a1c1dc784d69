// GET /api/overview and GET /api/servers/{id}/node-log: the home page's one call counts users per
// status and lists every server with its agent's report (asked for on the call; an agent that cannot
// be asked is shown unreachable, never a failed overview), and online now comes from the agents'
// access logs. Against a node agent running the real v2ray with a real v2ray client; both dialects.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUser } from "../../../test/support/factories.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
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
import { CleanupStack, startHttpServer } from "../../../test/support/v2ray.ts";
import type { NodeAgent } from "../../node/agent.ts";
import type { Overview } from "./overview.schemas.ts";

const needs = requires("v2ray");
const BODY = Buffer.alloc(16 * 1024, 7);

async function overview(t: TestApp): Promise<Overview> {
  const res = await request(t, "GET", "/api/overview");
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Overview;
}

describe("the overview without agents", () => {
  const stack = new CleanupStack();
  let t: TestApp;

  test("users per status as the users API has them; direct and unenrolled node servers listed", async () => {
    t = await createTestApp();
    stack.add(() => t.close());
    try {
      for (const body of [{}, {}, { status: "disabled" }, { data_limit_bytes: 1 }]) await createUser(t, body);
      const direct = await registerServer(t, await freePort(), { name: "b-direct" });
      const node = await registerServer(t, await freePort(), { name: "a-node", connection: "node" });
      const answer = await overview(t);
      const listed = (await request(t, "GET", "/api/users?per_page=100")).json() as {
        items: { status: keyof Overview["users"]["by_status"] }[];
      };
      const expected = { active: 0, disabled: 0, limited: 0, expired: 0, on_hold: 0 };
      for (const user of listed.items) expected[user.status] += 1;
      assert.deepEqual(answer.users.by_status, expected);
      assert.equal(answer.users.total, 4);
      assert.ok(expected.disabled >= 1);
      assert.deepEqual(
        answer.servers.map((s) => [s.name, s.connection]),
        [
          ["a-node", "node"],
          ["b-direct", "direct"],
        ],
      );
      const [nodeRow, directRow] = answer.servers;
      assert.equal(directRow?.agent, null);
      assert.equal(nodeRow?.id, node.id);
      assert.equal(nodeRow?.agent?.reachable, false);
      assert.equal(directRow?.id, direct.id);
      assert.deepEqual(answer.online.unreachable_server_ids, [node.id]);
      assert.equal(answer.online.users, 0);
      // The log of a direct server, or of a node no agent has joined: a 409, not a 500.
      for (const id of [direct.id, node.id]) {
        const log = await request(t, "GET", `/api/servers/${id}/node-log`);
        assert.equal(log.statusCode, 409, log.body);
        assert.equal((log.json() as { code: string }).code, "server_not_node");
      }
      const missing = await request(t, "GET", "/api/servers/7d0c0d5e-1111-4222-8333-444455556666/node-log");
      assert.equal(missing.statusCode, 404, missing.body);
    } finally {
      await stack.run();
    }
  });
});

describe("the overview and the core's log through a node agent", needs, () => {
  const stack = new CleanupStack();
  let t: TestApp;
  let node: NodeFixture;
  let agent: NodeAgent;
  needs.before(async () => {
    t = await createTestApp();
    stack.add(() => t.close());
    node = await joinedNode(t, stack.add, await listenPanel(t));
    agent = await startAgent(stack.add, node, { trafficIntervalMs: 500 });
  });
  needs.after(() => stack.run());

  test("the agent's report: versions, uptime, restarts (one after the core is killed)", async () => {
    const version = /V2Ray (\S+)/.exec(execFileSync("v2ray", ["-version"], { encoding: "utf8" }))?.[1];
    const first = (await overview(t)).servers.find((s) => s.id === node.serverId)?.agent;
    assert.equal(first?.reachable, true);
    assert.equal(first?.core_flavor, "v2ray");
    assert.equal(first?.core_version, version ?? null);
    assert.match(first?.agent_version ?? "", /^\d+\.\d+\.\d+/);
    assert.equal(first?.core_running, true);
    assert.equal(first?.restarts, 0);
    assert.ok(Date.parse(first?.certificate_not_after ?? "") > Date.now() + 80 * 86_400_000);
    process.kill(agent.core.report().pid ?? 0, "SIGKILL");
    const after = await waitFor(
      async () => {
        const row = (await overview(t)).servers.find((s) => s.id === node.serverId)?.agent;
        return row?.restarts === 1 && row.core_running === true ? row : false;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: "the restart counted" },
    );
    assert.equal(after.reachable, true);
  });

  test("a client's connection: online now counts its user; the log has its line, without its credential", async () => {
    const httpPort = await startHttpServer(stack.add, BODY);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, node.serverId, {
      template_id: template.id,
      port: await freePort(),
    });
    const access = await grant(t, node.serverId, inbound.id, { name: "watched" });
    assert.equal(access.sync_state, "synced", String(access.sync_error));
    const [link = ""] = await subscriptionLinks(t, access.user_id);
    const credential = /^vless:\/\/([^@]+)@/.exec(link)?.[1] ?? "";
    assert.match(credential, /^[0-9a-f-]{36}$/);
    const socksPort = await startClient(stack.add, "v2ray", decodeLink(link));
    await expectCarries(socksPort, httpPort, BODY, "the client");
    const online = await waitFor(
      async () => {
        const answer = await overview(t);
        return answer.online.users >= 1 ? answer.online : false;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "the user online" },
    );
    assert.equal(online.users, 1);
    assert.equal(online.addresses, 1);
    assert.deepEqual(online.unreachable_server_ids, []);
    const log = await waitFor(
      async () => {
        const res = await request(t, "GET", `/api/servers/${node.serverId}/node-log`);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as { lines: string[]; server_id: string };
        return body.lines.some((line) => line.includes(`email: ${access.proxy_user_id}`)) ? body : false;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "the access line in the log" },
    );
    assert.equal(log.server_id, node.serverId);
    assert.ok(log.lines.length <= 200);
    for (const line of log.lines) assert.ok(!line.includes(credential), line);
  });
});
