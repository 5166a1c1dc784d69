// Convergence against a real V2Ray core with the reconcile and traffic jobs running as `serve` runs
// them: a core killed with SIGKILL gets every inbound and grant back (and carries traffic) within
// the detection interval plus the re-apply, with the counted traffic kept; changes made while the
// core is down reach it when it is back, exactly (revoked users stay out).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import {
  bulkGrant,
  carriesEach,
  createUsers,
  FAULT_GRANTS,
  grantsOf,
  probeCore,
  startClients,
  startConvergence,
  waitConverged,
} from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, type Kind, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer, startV2rayServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");

const RECONCILE_MS = 250;
const stack = new CleanupStack();
const BODY = randomBytes(50_000);
let t: TestApp;
let httpPort: number;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const KINDS: Kind[] = [
  { protocol: "vless", network: "tcp", tls: false },
  { protocol: "vmess", network: "tcp", tls: false },
  { protocol: "trojan", network: "tcp", tls: false },
];

async function statusOf(serverId: string): Promise<string> {
  return (await request(t, "GET", `/api/servers/${serverId}`)).json().status;
}

async function downlinkOf(userId: string): Promise<number> {
  return (await request(t, "GET", `/api/users/${userId}/usage`)).json().downlink_bytes;
}

async function appliedStartedAt(serverId: string): Promise<string | null> {
  return (await t.deps.services.reconciler.state(serverId)).appliedCoreStartedAt;
}

describe("convergence with a real core", needs, () => {
  test(`a core killed with SIGKILL gets ${FAULT_GRANTS} grants on 3 inbounds back, and counted traffic is kept`, async (ctx) => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    const inbounds = [];
    for (const kind of KINDS) {
      const template = await templateFor(t, kind);
      inbounds.push(await createInbound(t, server.id, { template_id: template.id, port: await freePort() }));
    }
    const users = await createUsers(t.deps, FAULT_GRANTS, "killed");
    const samples: { userId: string; inboundId: string }[] = [];
    for (const [index, inbound] of inbounds.entries()) {
      const share = users.filter((_, i) => i % inbounds.length === index);
      const result = await bulkGrant(t, server.id, inbound.id, share);
      assert.deepEqual(result.sync, { synced: share.length, pending: 0, error: 0 });
      samples.push(
        { userId: share[0] ?? "", inboundId: inbound.id },
        { userId: share.at(-1) ?? "", inboundId: inbound.id },
      );
    }
    const jobs = startConvergence(t.deps, testLogger(), { reconcileMs: RECONCILE_MS, trafficMs: 200 });
    ctx.after(() => jobs.running.stop());
    await waitFor(() => appliedStartedAt(server.id), { what: "the first full apply", timeoutMs: 30_000 });
    const ports = await startClients(stack.add, t, samples);
    await waitFor(async () => (await carriesEach(ports, httpPort, BODY)).every(Boolean), {
      timeoutMs: 20_000,
      what: "every sampled user to carry traffic (a fresh client's first request may stall)",
    });
    const counted = samples[0]?.userId ?? "";
    await waitFor(async () => (await downlinkOf(counted)) >= BODY.length, {
      what: "traffic to be collected",
    });
    const countedBefore = await downlinkOf(counted);
    const appliedBefore = await appliedStartedAt(server.id);

    await core.kill("SIGKILL");
    await waitFor(async () => (await statusOf(server.id)) === "offline", { what: "status offline" });
    const restartedAt = performance.now();
    await core.restart();
    await waitFor(async () => (await carriesEach(ports, httpPort, BODY)).every(Boolean), {
      timeoutMs: 20_000,
      what: "every sampled user to carry traffic again",
    });
    const recoveredMs = performance.now() - restartedAt;
    await waitFor(async () => (await appliedStartedAt(server.id)) !== appliedBefore, {
      what: "a full re-apply",
    });
    await waitConverged(t.deps, server.id);
    const probe = await probeCore(core.apiAddress, await grantsOf(t.deps, server.id));
    assert.equal(probe.present.length, FAULT_GRANTS, `absent after the restart: ${probe.absent.length}`);
    assert.equal(await statusOf(server.id), "online");
    ctx.diagnostic(
      `recovered ${FAULT_GRANTS} grants ${Math.round(recoveredMs)} ms after the core was started again`,
    );
    assert.ok((await downlinkOf(counted)) >= countedBefore, "traffic counted before the kill is kept");
    await waitFor(async () => (await downlinkOf(counted)) >= countedBefore + BODY.length, {
      what: "traffic after the restart to be counted on top",
    });
    assert.ok(core.isAlive());
  });

  test("while the core is down: create an inbound, grant 50, revoke 10; back up, exactly the 40 work", async (ctx) => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    assert.equal((await request(t, "POST", `/api/servers/${server.id}/test`)).json().connected, true);
    await core.kill("SIGKILL");
    const jobs = startConvergence(t.deps, testLogger(), { reconcileMs: RECONCILE_MS });
    ctx.after(() => jobs.running.stop());

    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    assert.equal(inbound.sync_state, "pending");
    assert.match(String(inbound.sync_error), /.+/, "the inbound says why it is pending");
    const users = await createUsers(t.deps, 50, "offline");
    const granted = await bulkGrant(t, server.id, inbound.id, users);
    assert.deepEqual(granted.sync, { synced: 0, pending: 50, error: 0 });
    const ports = await startClients(
      stack.add,
      t,
      users.map((userId) => ({ userId, inboundId: inbound.id })),
    );
    const revoked = users.slice(0, 10);
    for (const userId of revoked) {
      const res = await request(
        t,
        "DELETE",
        `/api/servers/${server.id}/inbounds/${inbound.id}/users/${userId}`,
      );
      assert.equal(res.statusCode, 204, res.body);
    }
    const access = (await request(t, "GET", `/api/users/${users[10]}/access`)).json();
    assert.equal(access[0].sync_state, "pending");

    await core.restart();
    await waitConverged(t.deps, server.id);
    const works = await carriesEach(ports, httpPort, BODY);
    assert.deepEqual(
      works.map((ok, i) => (ok ? "works" : revoked.includes(users[i] ?? "") ? "revoked" : "BROKEN")),
      users.map((_, i) => (i < 10 ? "revoked" : "works")),
    );
    assert.ok(core.isAlive());
  });
});
