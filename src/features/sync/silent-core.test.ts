// A core that accepts the connection and never answers (a listener that reads and stays silent):
// every API call and every reconcile tick gives up at the core deadline, the server is offline, at
// most one tick per server is ever in flight, shutdown does not wait for the silence, and a healthy
// server next to it is reconciled meanwhile.
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import {
  bulkGrant,
  createUsers,
  startConvergence,
  waitConverged,
} from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");

const TIMEOUT_MS = 400;
const stack = new CleanupStack();
let t: TestApp;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: String(TIMEOUT_MS) });
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

async function silentListener(): Promise<{ port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const silent = createServer((socket) => {
    sockets.push(socket);
    socket.on("data", () => {}); // reads everything, answers nothing
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  stack.add(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => silent.close(resolve));
  });
  return { port: (silent.address() as { port: number }).port, sockets };
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; elapsedMs: number }> {
  const started = performance.now();
  const value = await work();
  return { value, elapsedMs: performance.now() - started };
}

describe("a core that never answers", needs, () => {
  test("API calls and reconcile ticks end at their deadlines, nothing piles up, other servers go on", async (ctx) => {
    const { port, sockets } = await silentListener();
    const silent = await registerServer(t, port, { name: "silent" });
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });

    const inboundPort = await freePort();
    const created = await timed(() =>
      createInbound(t, silent.id, { template_id: template.id, port: inboundPort }),
    );
    assert.equal(created.value.sync_state, "pending");
    assert.ok(created.elapsedMs < 4 * TIMEOUT_MS + 1000, `create took ${Math.round(created.elapsedMs)} ms`);
    const users = await createUsers(t.deps, 20, "silent");
    const granted = await timed(() => bulkGrant(t, silent.id, created.value.id, users));
    assert.deepEqual(granted.value.sync, { synced: 0, pending: 20, error: 0 });
    assert.ok(granted.elapsedMs < 4 * TIMEOUT_MS + 1000, `bulk took ${Math.round(granted.elapsedMs)} ms`);
    const sync = await timed(() => request(t, "POST", `/api/servers/${silent.id}/sync`));
    assert.equal(sync.value.statusCode, 504, sync.value.body);
    assert.equal(sync.value.json().code, "core_timeout");
    assert.ok(sync.elapsedMs < 3 * TIMEOUT_MS + 1000, `sync took ${Math.round(sync.elapsedMs)} ms`);

    const reconciler = t.deps.services.reconciler;
    for (let i = 0; i < 3; i++) {
      const tick = await timed(() => reconciler.tick(silent.id, new AbortController().signal));
      assert.equal(tick.value, undefined, "no reconcile without an answer");
      assert.ok(tick.elapsedMs < 2 * TIMEOUT_MS + 500, `tick took ${Math.round(tick.elapsedMs)} ms`);
    }

    const core = await startV2rayServer(stack.add);
    const healthy = await registerServer(t, core.apiPort, { name: "healthy" });
    await core.kill("SIGKILL");
    const pendingThere = await createInbound(t, healthy.id, {
      template_id: template.id,
      port: await freePort(),
    });
    assert.equal(pendingThere.sync_state, "pending");
    await core.restart();

    const jobs = startConvergence(t.deps, testLogger(), { reconcileMs: 50 });
    let maxInFlight = 0;
    const sampler = setInterval(() => {
      maxInFlight = Math.max(maxInFlight, jobs.reconcile.inFlight);
    }, 10);
    // If an assertion below fails, the jobs and the sampler still stop (before the app closes).
    ctx.after(() => {
      clearInterval(sampler);
      return jobs.running.stop();
    });
    const started = performance.now();
    await waitConverged(t.deps, healthy.id, 15_000);
    await waitFor(() => jobs.reconcile.finished >= 10, { what: "ten finished ticks", timeoutMs: 15_000 });
    const stopped = await timed(() => jobs.running.stop());
    clearInterval(sampler);
    ctx.diagnostic(`${jobs.reconcile.finished} ticks in ${Math.round(performance.now() - started)} ms`);

    assert.ok(maxInFlight <= 2, `at most one tick per server in flight, saw ${maxInFlight}`);
    assert.ok(stopped.elapsedMs < TIMEOUT_MS + 1000, `stop took ${Math.round(stopped.elapsedMs)} ms`);
    assert.equal((await request(t, "GET", `/api/servers/${silent.id}`)).json().status, "offline");
    assert.equal((await request(t, "GET", `/api/servers/${healthy.id}`)).json().status, "online");
    const stillPending = await request(t, "GET", `/api/servers/${silent.id}/inbounds/${created.value.id}`);
    assert.equal(stillPending.json().sync_state, "pending", "nothing pretends the silent core has it");
    assert.ok(sockets.length <= 3, `connections to the silent core: ${sockets.length}`);
  });
});
