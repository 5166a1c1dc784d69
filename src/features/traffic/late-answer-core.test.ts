// A read with reset whose answer comes after the panel's ordinary core deadline (issue 52): against
// real V2Ray 4.34 cores carrying a real client's bytes, a core stopped with SIGSTOP while it is read,
// and the panel's own event loop blocked while an answer is on its way. The core has reset its
// counters either way, so the answer must still be journaled: every byte the core counted is
// counted exactly once, and the other servers' collection does not wait for the straggler.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { type UserBytes as Bytes, settledUserBytes } from "../../../test/support/core-counters.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
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
import {
  CleanupStack,
  startHttpServer,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";
import { CoreChannel } from "../../cores/grpc-channel.ts";
import { GrpcCoreClient } from "../../cores/grpc-core-client.ts";
import { collectTrafficJob } from "../../jobs/collect-traffic.ts";
import { CoreUnavailableError } from "../../lib/errors.ts";
import { limiter } from "../../lib/limiter.ts";
import type { ServerLeases } from "../sync/leases.ts";

const needs = requires("v2ray", "ss");

const stack = new CleanupStack();
const BODY = randomBytes(200_000);
/** The ordinary core deadline in these tests. */
const CORE_TIMEOUT_MS = 2000;
let t: TestApp;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: String(CORE_TIMEOUT_MS) });
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

type Seat = { core: V2rayServer; serverId: string; userId: string; email: string };

/** A real core with one granted user whose real client pulled BODY through it. */
async function seatWithTraffic(name: string): Promise<Seat> {
  const core = await startV2rayServer(stack.add);
  const server = await registerServer(t, core.apiPort, { name });
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
  const access = await grant(t, server.id, inbound.id, { name: `${name}-user` });
  assert.equal(access.sync_state, "synced", String(access.sync_error));
  const [link] = await subscriptionLinks(t, access.user_id);
  assert.ok(link !== undefined);
  const socksPort = await startClient(stack.add, "v2ray", decodeLink(link));
  const httpPort = await startHttpServer(stack.add, BODY);
  await expectCarries(socksPort, httpPort, BODY, `${name}'s client`);
  return { core, serverId: server.id, userId: access.user_id, email: access.proxy_user_id };
}

/** What the core counted for the user, read WITHOUT reset (once the client's bytes have settled). */
async function countedOnCore(seat: Seat): Promise<Bytes> {
  const client = new GrpcCoreClient({ address: seat.core.apiAddress, layout: "v2ray-4", capabilities: [] });
  try {
    return await settledUserBytes(client, seat.email, BODY.length);
  } finally {
    client.close();
  }
}

async function usage(userId: string): Promise<Bytes> {
  const body = (await request(t, "GET", `/api/users/${userId}/usage`)).json();
  return { uplink_bytes: body.uplink_bytes, downlink_bytes: body.downlink_bytes };
}

function leasesHolding(held: () => readonly string[]): ServerLeases {
  return {
    holds: (serverId: string) => held().includes(serverId),
    track: () => {},
  } as unknown as ServerLeases;
}

/** Bytes waiting in the receive queues of loopback TCP sockets to/from `port` (ss, no root needed). */
function queuedBytes(port: number, side: "sport" | "dport"): number {
  const out = execFileSync("ss", ["-Htn", "state", "established", `( ${side} = :${port} )`], {
    encoding: "utf8",
  });
  return out
    .split("\n")
    .filter((line) => line.trim() !== "")
    .reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[0]), 0);
}

describe("a late answer to a read with reset", needs, () => {
  test("a core stopped while it is read: the others are collected meanwhile, and its bytes are journaled exactly once after it resumes, also once its lease has moved", async () => {
    const stopped = await seatWithTraffic("stopped core");
    const healthy = await seatWithTraffic("healthy core");
    const expectedStopped = await countedOnCore(stopped);
    const expectedHealthy = await countedOnCore(healthy);
    let held = [stopped.serverId, healthy.serverId];
    const job = collectTrafficJob({
      traffic: t.deps.services.traffic,
      leases: leasesHolding(() => held),
      logger: t.deps.logger,
      intervalMs: 60_000,
      concurrency: 2,
    });
    // A run and the fold it asks for (the fold runs in a loop of its own: jobs/fold-traffic.ts).
    const run = async () => {
      await job.run({ signal: new AbortController().signal });
      await job.folder.idle();
    };

    process.kill(stopped.core.pid(), "SIGSTOP");
    try {
      await run();
      assert.deepEqual(await usage(healthy.userId), expectedHealthy, "the healthy core's bytes, in that run");
      assert.deepEqual(await usage(stopped.userId), { uplink_bytes: 0, downlink_bytes: 0 });
      await run(); // the stopped core's read is still on its way: not read again, nothing lost
      // The lease moves to another instance while the answer is on its way.
      held = [healthy.serverId];
    } finally {
      process.kill(stopped.core.pid(), "SIGCONT");
    }
    await waitFor(
      async () => {
        await run();
        return (await usage(stopped.userId)).downlink_bytes > 0;
      },
      { timeoutMs: 30_000, what: "the stopped core's late answer journaled and folded" },
    );
    await run();
    await run();
    assert.deepEqual(await usage(stopped.userId), expectedStopped, "exactly what the core counted, once");
    assert.deepEqual(await usage(healthy.userId), expectedHealthy, "not counted twice");
  });

  test("the panel's event loop blocked longer than the core deadline while the answer comes in: the answer is still counted", async () => {
    const seat = await seatWithTraffic("blocked panel");
    const expected = await countedOnCore(seat);
    const pid = seat.core.pid();
    // The core holds the request unread until the panel is blocked, so the answer comes in during the block.
    process.kill(pid, "SIGSTOP");
    let resumed = false;
    try {
      const collecting = t.deps.services.traffic.collectAll([seat.serverId], limiter(1));
      await waitFor(() => queuedBytes(seat.core.apiPort, "sport") > 0, {
        timeoutMs: 15_000,
        what: "the read with reset waiting in the stopped core's socket",
      });
      // Blocked in the check phase (as a long apply blocks in an I/O callback): the next loop turn
      // runs the expired timers (the deadlines) before it reads the sockets.
      await new Promise((resolve) => setImmediate(resolve));
      const startedMs = Date.now();
      const boundMs = startedMs + 60_000;
      // Synchronous: no timer, socket or promise of this process runs until it ends.
      for (;;) {
        const elapsedMs = Date.now() - startedMs;
        if (!resumed && elapsedMs > CORE_TIMEOUT_MS) {
          process.kill(pid, "SIGCONT");
          resumed = true;
        }
        const answered = resumed && queuedBytes(seat.core.apiPort, "dport") > 0;
        if ((answered && elapsedMs > 2 * CORE_TIMEOUT_MS) || Date.now() > boundMs) break;
      }
      const [result] = await collecting;
      assert.equal(result?.status, "fulfilled", "a late answer is no failure");
    } finally {
      if (!resumed) process.kill(pid, "SIGCONT");
    }
    await waitFor(
      async () => {
        await t.deps.services.traffic.collectAll([seat.serverId], limiter(1));
        await t.deps.services.traffic.fold();
        return (await usage(seat.userId)).downlink_bytes > 0;
      },
      { timeoutMs: 30_000, what: "the answer that came in during the block, journaled and folded" },
    );
    await t.deps.services.traffic.collect(seat.serverId);
    assert.deepEqual(await usage(seat.userId), expected, "exactly what the core counted, once");
  });

  test("the inbound read failing after the users' read with reset: the users' bytes are returned, not dropped", async () => {
    const seat = await seatWithTraffic("half-read core");
    const expected = await countedOnCore(seat);
    const channel = new CoreChannel({ address: seat.core.apiAddress });
    const isInboundRead = (request: Uint8Array) => Buffer.from(request).includes("inbound>>>");
    const client = new GrpcCoreClient({
      address: seat.core.apiAddress,
      layout: "v2ray-4",
      capabilities: [],
      // The real core answers the users' read; the inbound read fails as an unreachable core would.
      transport: {
        kind: "direct",
        address: seat.core.apiAddress,
        call: (prepared, secrets) =>
          isInboundRead(prepared.request)
            ? Promise.reject(new CoreUnavailableError("the core went away"))
            : channel.call(prepared, secrets),
        close: () => channel.close(),
      },
    });
    try {
      const read = await client.queryTraffic(true);
      const users = JSON.parse(`[${read.users.json}]`) as [string, number, number][];
      assert.deepEqual(users, [[seat.email, expected.uplink_bytes, expected.downlink_bytes]]);
      assert.equal(read.inbounds.size, 0);
    } finally {
      client.close();
    }
  });
});
