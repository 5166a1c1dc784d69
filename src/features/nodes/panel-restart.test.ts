// The panel restarted while a node serves on, against the real v2ray core and a real v2ray client:
// `portcullis serve` runs as a child process; an agent owns the core. The panel is stopped — once
// with SIGTERM, once with SIGKILL — and started again on the same database while the client keeps
// downloading the whole time: every download succeeds, the agent journals what it reads while the
// panel is away, and once the panel is back the user's usage settles within 1 % of what the client
// received and stays there — every byte counted, none twice.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { joinNode, LOOPBACK_BASE, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import {
  type PortcullisProcess,
  type Store,
  sharedStore,
  startPortcullis,
} from "../../../test/support/portcullis-process.ts";
import { freePort } from "../../../test/support/ports.ts";
import { kindTemplate, startClient } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, fetchViaSocks, startHttpServer, tempDir } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
needs.after(() => stack.run());
const BODY = Buffer.alloc(256 * 1024, 5);
// Collections every second; a lease a SIGKILLed panel left behind lapses after 3 s.
const ENV = {
  PORTCULLIS_TRAFFIC_INTERVAL_MS: "1000",
  PORTCULLIS_RECONCILE_INTERVAL_MS: "1000",
  PORTCULLIS_LEASE_TTL_MS: "3000",
};

type Json = Record<string, unknown>;

async function call(panel: PortcullisProcess, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await panel.api(method, path, body);
  const json = (await res.json()) as Json;
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function downlinkOf(panel: PortcullisProcess, userId: string): Promise<number> {
  return Number((await call(panel, "GET", `/api/users/${userId}/usage`)).downlink_bytes);
}

describe("the panel restarted while a node serves on", needs, () => {
  test("traffic flows across SIGTERM and SIGKILL restarts and is counted once", async () => {
    const store: Store = await sharedStore(stack.add);
    let panel = await startPortcullis(stack.add, store, ENV);

    // A node server, its agent joined and running, a VLESS inbound and a user with a real client.
    const agentPort = await freePort();
    const server = await call(panel, "POST", "/api/servers", {
      name: "restart node",
      hostname: "127.0.0.1",
      grpc_port: agentPort,
      connection: "node",
    });
    const serverId = String(server.id);
    await call(panel, "PUT", `/api/servers/${serverId}/node-base`, { document: LOOPBACK_BASE });
    const enrollment = await call(panel, "POST", `/api/servers/${serverId}/node-enrollment`);
    const node: NodeFixture = { serverId, dir: tempDir(stack.add), agentPort, panelUrl: panel.baseUrl };
    const joined = await joinNode(String(enrollment.join_string), node.dir, panel.baseUrl);
    assert.equal(joined.code, 0, joined.stderr);
    await startAgent(stack.add, node, { trafficIntervalMs: 500 });
    const template = await call(
      panel,
      "POST",
      "/api/templates",
      kindTemplate({ protocol: "vless", network: "tcp", tls: false }),
    );
    const inbound = await call(panel, "POST", `/api/servers/${serverId}/inbounds`, {
      template_id: template.id,
      port: await freePort(),
    });
    const access = await call(panel, "POST", `/api/servers/${serverId}/inbounds/${inbound.id}/users`, {
      name: "restart user",
    });
    const userId = String(access.user_id);
    const sub = await fetch(`${panel.baseUrl}/sub/${userId}`);
    assert.equal(sub.status, 200);
    const links = Buffer.from(await sub.text(), "base64")
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"));
    const socksPort = await startClient(stack.add, "v2ray", decodeLink(links[0] ?? ""));
    const httpPort = await startHttpServer(stack.add, BODY);

    let received = 0;
    const download = async () => {
      const res = await fetchViaSocks(socksPort, { port: httpPort, path: "/" }, 5000);
      assert.ok(res.status === 200 && res.body.equals(BODY), "a download through the node");
      received += res.body.length;
    };
    await waitFor(() => download().then(() => true), { timeoutMs: 30_000, what: "the first download" });
    const batchesOnAgent = () =>
      readdirSync(join(node.dir, "traffic")).filter((name) => /^\d{12}\.json$/.test(name)).length;

    /** The usage settles within 1 % of what the client received, and stays (no late second count). */
    const settles = async (what: string) => {
      const counted: number = await waitFor(
        async () => {
          const value = await downlinkOf(panel, userId);
          return Math.abs(value - received) <= received * 0.01 && batchesOnAgent() === 0 ? value : false;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: `${what}: usage near ${received} bytes` },
      );
      // Then it stays: two reads two collections apart agree, and the figure is still within 1 %.
      let last = counted;
      const settled = await waitFor(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 2000));
          const value = await downlinkOf(panel, userId);
          const stable = value === last;
          last = value;
          return stable ? value : false;
        },
        { timeoutMs: 30_000, intervalMs: 0, what: `${what}: the usage to stay` },
      );
      assert.ok(
        Math.abs(settled - received) <= received * 0.01,
        `${what}: counted ${settled}, the client received ${received}`,
      );
    };

    for (let i = 0; i < 5; i++) await download();
    await settles("before any restart");

    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      // The panel goes away; the client keeps downloading, and the agent journals what it reads.
      panel.signal(signal);
      const exit = await panel.exited;
      assert.equal(signal === "SIGKILL" ? exit.signal : exit.code, signal === "SIGKILL" ? "SIGKILL" : 0);
      const awayFrom = received;
      await waitFor(
        async () => {
          await download();
          return received - awayFrom >= 8 * BODY.length && batchesOnAgent() > 0;
        },
        { timeoutMs: 60_000, intervalMs: 0, what: "downloads journaled while the panel is away" },
      );
      // Started again on the same database, with downloads going on while it starts.
      let started = false;
      const starting = startPortcullis(stack.add, store, ENV).finally(() => {
        started = true;
      });
      while (!started) await download();
      panel = await starting;
      for (let i = 0; i < 5; i++) await download();
      assert.ok(received - awayFrom >= 8 * BODY.length);
      await settles(`after a ${signal} restart`);
    }
  });
});
