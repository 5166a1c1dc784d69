// Users INLINE in AddInbound through a node agent, against the real v2ray core and real v2ray
// clients, on whichever dialect DATABASE_URL selects:
// - a full apply (POST /sync: V2Ray re-applies the inbound) sends every user inline: one
//   AddInbound, no AddUser; the agent's desired state holds each of them as a user; a sample carries
//   traffic;
// - the agent's connection cuts spare the inline users (nothing held back for them) while a user
//   removed after the apply is cut;
// - the core SIGKILLed: the agent re-applies every user, the inline ones included (each is on the
//   core again, probed), and the removed user stays removed (the stored AddInbound does not bring it
//   back).
// Without the agent recording inline users as users (cores/relay-record.ts) the desired state holds
// none of them, the re-apply brings none back, and the removed one comes back with the inbound.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  bulkGrant,
  carriesEach,
  createUsers,
  grantsOf,
  probeCore,
  startClients,
  startConvergence,
} from "../../../test/support/convergence.ts";
import { joinedNode, listenPanel, type NodeFixture, startAgent } from "../../../test/support/node-agent.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer } from "../../../test/support/v2ray.ts";
import type { CoreClient } from "../../cores/core-client.ts";
import type { NodeAgent } from "../../node/agent.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = randomBytes(20_000);
const USERS = 400;
let t: TestApp;
let node: NodeFixture;
let agent: NodeAgent;
let httpPort: number;
const logs: { message: string; fields?: Record<string, unknown> }[] = [];

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  stack.add(() => t.close());
  node = await joinedNode(t, stack.add, await listenPanel(t));
  agent = await startAgent(stack.add, node, {
    trafficIntervalMs: 300,
    log: (message, fields) => logs.push({ message, ...(fields === undefined ? {} : { fields }) }),
  });
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(() => stack.run());

/** Counts the pooled client's inbound replacements, users inline, and AddUser calls. */
function countCalls(client: CoreClient) {
  const calls = { replace: 0, inline: 0, addUser: 0 };
  const { addUser, replaceInbound } = client;
  client.addUser = (ref, user) => {
    calls.addUser += 1;
    return addUser.call(client, ref, user);
  };
  client.replaceInbound = (inbound) => {
    calls.replace += 1;
    calls.inline += inbound.emails.length;
    return replaceInbound.call(client, inbound);
  };
  return { calls, restore: () => Object.assign(client, { addUser, replaceInbound }) };
}

const desiredUsers = () => (agent.status().desired as { users: number }).users;
const cutLogs = () => logs.filter((entry) => entry.message === "cutting removed users' connections");

describe("users inline in AddInbound through a node agent", needs, () => {
  test("a full apply sends them inline; the agent re-applies them, spares them, and keeps a removed one out", async (ctx) => {
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, node.serverId, {
      template_id: template.id,
      port: await freePort(),
    });
    const users = await createUsers(t.deps, USERS, "agent-inline");
    const granted = await bulkGrant(t, node.serverId, inbound.id, users);
    assert.deepEqual(granted.sync, { synced: USERS, pending: 0, error: 0 });
    assert.equal(desiredUsers(), USERS);

    // Three users to keep, one to remove later; every one carries traffic (its connection is known).
    const kept = [users[0], users[USERS >> 1], users.at(-1)] as string[];
    const removed = users[1] as string;
    const ports = await startClients(
      stack.add,
      t,
      [...kept, removed].map((userId) => ({ userId, inboundId: inbound.id })),
    );
    const carrying = async (what: string) =>
      waitFor(async () => (await carriesEach(ports.slice(0, 3), httpPort, BODY)).every(Boolean), {
        timeoutMs: 20_000,
        what,
      });
    await carrying("the sampled users before the full apply");
    await waitFor(async () => (await carriesEach(ports.slice(3), httpPort, BODY))[0] === true, {
      timeoutMs: 20_000,
      what: "the user to be removed, before the full apply",
    });

    // A full apply: V2Ray's inbound is removed and added again, every user inline.
    const counted = countCalls(await t.deps.services.servers.clientOf(node.serverId));
    ctx.after(counted.restore);
    const summary = await t.deps.services.reconciler.syncNow(node.serverId);
    assert.ok(summary !== undefined);
    assert.deepEqual(counted.calls, { replace: 1, inline: USERS, addUser: 0 });
    assert.deepEqual(agent.status().desired, { inbounds: 1, users: USERS });
    await carrying("the sampled users after the inline apply");

    // One user removed: the agent cuts that one, and holds back no inline user as absent.
    const { running } = startConvergence(t.deps, t.deps.logger, { reconcileMs: 2000 });
    stack.add(() => running.stop());
    const res = await request(t, "PUT", `/api/users/${removed}`, { status: "disabled" });
    assert.equal(res.statusCode, 200, res.body);
    await waitFor(() => desiredUsers() === USERS - 1, { timeoutMs: 15_000, what: "the RemoveUser relayed" });
    await waitFor(() => cutLogs().some((entry) => entry.fields?.users === 1), {
      timeoutMs: 15_000,
      what: "the removed user's connections cut",
    });
    for (const entry of cutLogs()) assert.equal(entry.fields?.held_back, 0, JSON.stringify(entry));
    await carrying("the sampled users after the cut");
    await running.stop();

    // The core killed: the agent restarts it and re-applies every user, the inline ones included.
    const replaysBefore = logs.filter((entry) => entry.message === "desired state re-applied").length;
    const restarts = agent.core.report().restarts;
    process.kill(agent.core.report().pid ?? 0, "SIGKILL");
    const replay = await waitFor(
      () =>
        logs.filter((entry) => entry.message === "desired state re-applied").at(replaysBefore)?.fields ??
        false,
      { timeoutMs: 30_000, intervalMs: 50, what: "the agent's re-apply after the core was killed" },
    );
    assert.equal(agent.core.report().restarts, restarts + 1);
    assert.equal(replay.users, USERS - 1, JSON.stringify(replay));
    assert.equal(replay.failed, 0, JSON.stringify(replay));
    const grants = await grantsOf(t.deps, node.serverId);
    const removedEmail = (
      await t.deps.database.db
        .selectFrom("user_access")
        .select("proxy_user_id")
        .where("user_id", "=", removed)
        .executeTakeFirstOrThrow()
    ).proxy_user_id;
    const probe = await probeCore(agent.core.relay.address, grants);
    assert.equal(probe.present.length, USERS - 1, `absent: ${probe.absent.join(", ")}`);
    assert.deepEqual(probe.absent, [removedEmail], "the removed user stays removed");
    await carrying("the sampled users after the core restart");
    assert.equal(
      (await carriesEach(ports.slice(3), httpPort, BODY))[0],
      false,
      "the removed user is refused",
    );
  });
});
