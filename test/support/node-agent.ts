// A panel and a node agent on loopback for tests: the panel listens (the agent joins over HTTP), a
// `node` server is registered at the agent's port, the join string is spent by `portcullis node
// join` (in-process), and the agent runs the real v2ray. Everything stops in the cleanup hook.
import assert from "node:assert/strict";
import { runCli } from "../../src/cli/commands.ts";
import { NodeAgent } from "../../src/node/agent.ts";
import type { TestApp } from "./app.ts";
import { freePort } from "./ports.ts";
import { registerServer } from "./provisioning.ts";
import { request } from "./templates.ts";
import { type Cleanup, tempDir } from "./v2ray.ts";

/** The default base without the private-range block: tests carry traffic to loopback servers. */
export const LOOPBACK_BASE = {
  log: { loglevel: "warning" },
  outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }],
};

export type NodeFixture = { serverId: string; dir: string; agentPort: number; panelUrl: string };

export async function listenPanel(t: TestApp): Promise<string> {
  await t.app.listen({ host: "127.0.0.1", port: 0 });
  const address = t.app.server.address();
  assert.ok(typeof address === "object" && address !== null);
  return `http://127.0.0.1:${address.port}`;
}

export async function enroll(t: TestApp, serverId: string): Promise<string> {
  const res = await request(t, "POST", `/api/servers/${serverId}/node-enrollment`);
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { join_string: string }).join_string;
}

export async function joinNode(
  joinString: string,
  dir: string,
  panelUrl: string,
): Promise<{ code: number; stderr: string }> {
  let stderr = "";
  const code = await runCli(["node", "join", joinString, "--dir", dir, "--panel", panelUrl], {
    stdout: () => {},
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stderr };
}

/** A node server, joined, with its base set to LOOPBACK_BASE; the agent is not started. */
export async function joinedNode(t: TestApp, cleanup: Cleanup, panelUrl: string): Promise<NodeFixture> {
  const agentPort = await freePort();
  const server = await registerServer(t, agentPort, { connection: "node" });
  const base = await request(t, "PUT", `/api/servers/${server.id}/node-base`, { document: LOOPBACK_BASE });
  assert.equal(base.statusCode, 200, base.body);
  const dir = tempDir(cleanup);
  const joined = await joinNode(await enroll(t, server.id), dir, panelUrl);
  assert.equal(joined.code, 0, joined.stderr);
  return { serverId: server.id, dir, agentPort, panelUrl };
}

export async function startAgent(
  cleanup: Cleanup,
  node: NodeFixture,
  options: {
    trafficIntervalMs?: number;
    log?: (message: string, fields?: Record<string, unknown>) => void;
  } = {},
): Promise<NodeAgent> {
  const agent = new NodeAgent({
    dir: node.dir,
    host: "127.0.0.1",
    port: node.agentPort,
    coreBinary: "v2ray",
    coreApiPort: await freePort(),
    backoff: { initialMs: 50, maxMs: 500 },
    trafficIntervalMs: options.trafficIntervalMs ?? 500,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  cleanup(() => agent.stop());
  await agent.start();
  return agent;
}
