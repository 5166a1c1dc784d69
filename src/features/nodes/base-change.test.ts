// A changed base document reaches a running agent, against the real v2ray core and real v2ray
// clients: PUT /api/servers/{id}/node-base with an added blackhole outbound, a routing rule sending
// one destination port to it, and the log level raised to "info"; the panel's next call hands it to
// the agent, which writes it into its core's config and restarts the core with it. The core then
// behaves by it (the routed port gets nothing, a connection's "[Info]" lines appear in its log) and both users keep
// their access through the restart (the agent re-applies them).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import {
  joinedNode,
  LOOPBACK_BASE,
  listenPanel,
  type NodeFixture,
  startAgent,
} from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  carries,
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
import { baseHash } from "../../cores/node-material.ts";
import type { NodeAgent } from "../../node/agent.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = Buffer.alloc(64 * 1024, 3);
let t: TestApp;
let node: NodeFixture;
let agent: NodeAgent;

needs.before(async () => {
  t = await createTestApp();
  stack.add(() => t.close());
  node = await joinedNode(t, stack.add, await listenPanel(t));
  agent = await startAgent(stack.add, node);
});
needs.after(() => stack.run());

describe("a changed base document on a running agent", needs, () => {
  test("reaches the core's config and behaviour, and no user loses access", async () => {
    const open = await startHttpServer(stack.add, BODY);
    const routed = await startHttpServer(stack.add, BODY);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, node.serverId, {
      template_id: template.id,
      port: await freePort(),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    const clients: number[] = [];
    for (const name of ["base one", "base two"]) {
      const access = await grant(t, node.serverId, inbound.id, { name });
      assert.equal(access.sync_state, "synced", String(access.sync_error));
      const [link] = await subscriptionLinks(t, access.user_id);
      clients.push(await startClient(stack.add, "v2ray", decodeLink(link ?? "")));
    }
    for (const socks of clients) {
      await expectCarries(socks, open, BODY, "a user before the change");
      await expectCarries(socks, routed, BODY, "a user to the port the new base will route away");
    }
    // A connection's info lines ("[Info] [<session>] proxy/…"; the core's start prints one info
    // line before it reads its log level) are not written at "warning".
    const sessionInfo = /\[Info\] \[\d+\]/;
    assert.ok(
      !agent.core.recentLines().some((line) => sessionInfo.test(line)),
      agent.core.recentLines().join("\n"),
    );
    const restartsBefore = agent.core.report().restarts;

    const document = {
      log: { loglevel: "info" },
      outbounds: [...LOOPBACK_BASE.outbounds, { tag: "sink", protocol: "blackhole", settings: {} }],
      routing: { rules: [{ type: "field", port: String(routed), outboundTag: "sink" }] },
    };
    const put = await request(t, "PUT", `/api/servers/${node.serverId}/node-base`, { document });
    assert.equal(put.statusCode, 200, put.body);
    const stored = put.json().document as unknown;

    // The panel's next call to the core (here the operator's /test) hands the document over first.
    const tried = await request(t, "POST", `/api/servers/${node.serverId}/test`);
    assert.equal(tried.statusCode, 200, tried.body);
    assert.equal(tried.json().connected, true, tried.body);
    const status = agent.status();
    assert.equal(status.base_sha256, baseHash(stored));
    assert.equal(agent.core.report().restarts, restartsBefore + 1, "the core was restarted with it");

    // The config the agent wrote for its core holds the document, with the agent's own parts kept.
    const config = JSON.parse(readFileSync(join(node.dir, "core-config.json"), "utf8")) as {
      log: { loglevel: string };
      outbounds: { tag: string; protocol: string }[];
      routing: { rules: { outboundTag: string; port?: string }[] };
    };
    assert.equal(config.log.loglevel, "info");
    assert.ok(config.outbounds.some((o) => o.tag === "sink" && o.protocol === "blackhole"));
    assert.equal(config.routing.rules[0]?.outboundTag, "api", "the API's rule stays first");
    assert.ok(config.routing.rules.some((r) => r.outboundTag === "sink" && r.port === String(routed)));

    // The core behaves by it, and both users kept their access through its restart.
    for (const socks of clients) {
      await expectCarries(socks, open, BODY, "a user after the change");
      await expectBlocked(socks, routed, BODY, "a user to the routed port");
    }
    await waitFor(() => agent.core.recentLines().some((line) => sessionInfo.test(line)), {
      what: "info lines in the core's log",
      timeoutMs: 10_000,
    });
    const replay = status.last_replay as { users: number; failed: number } | null;
    assert.ok(replay !== null && replay.users === 2 && replay.failed === 0, JSON.stringify(replay));

    // Back to a base without the rule: the port is reachable again.
    const back = await request(t, "PUT", `/api/servers/${node.serverId}/node-base`, {
      document: LOOPBACK_BASE,
    });
    assert.equal(back.statusCode, 200, back.body);
    assert.equal((await request(t, "POST", `/api/servers/${node.serverId}/test`)).json().connected, true);
    for (const socks of clients)
      await waitFor(() => carries(socks, routed, BODY), { what: "the port again" });
  });
});
