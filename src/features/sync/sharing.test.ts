// Several instances on one PostgreSQL database sharing the fleet, in one process (real leases and
// heartbeats, the real reconcile and traffic jobs, Xray stand-ins over gRPC that record every call)
// and as `portcullis serve` child processes, one of them killed.
// A join splits the servers, a clean leave and a crash hand them over, and through all of it no
// server is held by two instances at one observation, a restarted core gets each user exactly once
// (users sent, by AddUser or inline in AddInbound, = grants: a second reconciler would add them again) and traffic is counted once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { sql } from "kysely";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { bulkGrant, createUsers } from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { sharedStore, startPortcullis } from "../../../test/support/portcullis-process.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  kindTemplate,
  registerServer,
  templateFor,
} from "../../../test/support/provisioning.ts";
import {
  type RecordingXray,
  startRecordingXray,
  XRAY_RELEASES,
} from "../../../test/support/recording-grpc.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { xrayProxyUsers } from "../../cores/inbound-builder/inspect-xray.ts";
import * as cmd from "../../gen/xray/app/proxyman_command_pb.ts";
import { collectTrafficJob } from "../../jobs/collect-traffic.ts";
import { reconcileJob } from "../../jobs/reconcile.ts";
import type { Job } from "../../jobs/runner.ts";

const SERVERS = 6;
const USERS_PER_SERVER = 8;
const RECONCILE_MS = 100;
const CONFIG = {
  PORTCULLIS_RECONCILE_INTERVAL_MS: String(RECONCILE_MS),
  PORTCULLIS_LEASE_TTL_MS: "1500",
  PORTCULLIS_CORE_TIMEOUT_MS: "2000",
};
const skip = process.env.DATABASE_URL === undefined ? "needs PostgreSQL (DATABASE_URL)" : false;

type Core = { xray: RecordingXray; serverId: string; tag: string; emails: string[] };

/** One panel instance: its app and its background loops, which it can leave cleanly or crash out of. */
type Instance = {
  name: string;
  app: TestApp;
  holds(serverId: string): boolean;
  /** SIGTERM: the loops stop, running work ends, leases and heartbeat are released. */
  leave(): Promise<void>;
  /** SIGKILL: the loops stop where they are; nothing is released, the rows expire. */
  crash(): void;
  isRunning: boolean;
  /** Reconcile ticks finished so far. */
  readonly ticks: number;
};

const stack = new CleanupStack();
let first: TestApp;
const cores: Core[] = [];
const instances: Instance[] = [];

/** Samples every running instance's holds() all along: a server held by two at once is a failure. */
const observer = { samples: 0, overlaps: [] as string[], stopped: false, done: Promise.resolve() };

function startObserver(): void {
  observer.done = (async () => {
    while (!observer.stopped) {
      for (const core of cores) {
        const holders = instances.filter((i) => i.isRunning && i.holds(core.serverId)).map((i) => i.name);
        if (holders.length > 1) observer.overlaps.push(`${core.serverId}: ${holders.join(", ")}`);
      }
      observer.samples += 1;
      await delay(2);
    }
  })();
}

async function startInstance(app: TestApp): Promise<Instance> {
  const { deps } = app;
  const { leases, logger } = deps;
  const reconcile = reconcileJob({
    ...{ reconciler: deps.services.reconciler, servers: deps.services.servers, leases, logger },
    ...{ intervalMs: RECONCILE_MS, concurrency: 4 },
  });
  const jobs: Job[] = [
    reconcile,
    collectTrafficJob({ traffic: deps.services.traffic, leases, logger, intervalMs: 150, concurrency: 4 }),
  ];
  const controller = new AbortController();
  const loops = jobs.map(async (job) => {
    while (!controller.signal.aborted) {
      await job.run({ signal: controller.signal }).catch(() => {});
      await delay(job.intervalMs, undefined, { signal: controller.signal }).catch(() => {});
    }
  });
  const instance: Instance = {
    name: leases.holder,
    app,
    holds: (id) => leases.holds(id),
    isRunning: true,
    get ticks() {
      return reconcile.finished;
    },
    async leave() {
      controller.abort();
      await Promise.all(loops);
      await Promise.all(jobs.map((job) => job.drain?.()));
      instance.isRunning = false;
    },
    crash() {
      controller.abort();
      // Its local leases lapse on their own timers (ttl − margin); the observer keeps watching them.
    },
  };
  instances.push(instance);
  return instance;
}

const heldBy = (instance: Instance) => cores.filter((c) => instance.holds(c.serverId)).map((c) => c.serverId);

/** Waits until the running instances' holdings are `sizes` (sorted) and cover every server. */
async function split(running: Instance[], sizes: number[], what: string): Promise<string[][]> {
  return waitFor(
    () => {
      const held = running.map(heldBy);
      const all = new Set(held.flat());
      const counts = held.map((ids) => ids.length).sort();
      return all.size === SERVERS && JSON.stringify(counts) === JSON.stringify(sizes) ? held : undefined;
    },
    { what, timeoutMs: 20_000 },
  );
}

/** Users sent to the core: one per AddUser, plus those inline in each AddInbound (a full apply's). */
const usersSent = (xray: RecordingXray) => {
  let users = 0;
  for (const call of xray.calls) {
    if (call.path.endsWith("/AlterInbound")) {
      const type = (call.request as cmd.AlterInboundRequest).operation?.type;
      if (type === cmd.AddUserOperationSchema.typeName) users += 1;
    } else if (call.path.endsWith("/AddInbound")) {
      const proxy = (call.request as cmd.AddInboundRequest).inbound?.proxySettings;
      const layout = XRAY_RELEASES[xray.release].layout;
      users += proxy === undefined ? 0 : (xrayProxyUsers(proxy, layout)?.length ?? 0);
    }
  }
  return users;
};

/** Every core restarted empty; each must get each of its users back exactly once. */
async function restartCoresAndCountAdds(what: string): Promise<void> {
  for (const core of cores) await core.xray.restart();
  await waitFor(() => cores.every((c) => c.xray.inbounds.get(c.tag)?.users.size === USERS_PER_SERVER), {
    what: `every restarted core to hold its users (${what})`,
    timeoutMs: 30_000,
  });
  // A second reconciler of the same server would add the users again: let every instance finish a
  // round of ticks over what it holds before counting.
  const running = instances.filter((i) => i.isRunning);
  const after = running.map((i) => i.ticks + heldBy(i).length);
  await waitFor(() => running.every((i, k) => i.ticks >= (after[k] ?? 0)), {
    what: "another round of ticks",
  });
  for (const core of cores) {
    assert.equal(usersSent(core.xray), USERS_PER_SERVER, `${what}: users sent to ${core.serverId}`);
  }
}

const usedBytes = async () =>
  Number(
    (
      await sql<{ n: string }>`SELECT coalesce(sum(lifetime_used_bytes), 0) AS n FROM users`.execute(
        first.deps.database.db,
      )
    ).rows[0]?.n,
  );

before(async () => {
  if (skip !== false) return;
  first = await createTestApp(CONFIG);
  const template = await templateFor(first, { protocol: "vless", network: "tcp", tls: false });
  const users = await createUsers(first.deps, SERVERS * USERS_PER_SERVER, "shared");
  for (let i = 0; i < SERVERS; i++) {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(first, Number(xray.address.split(":")[1]));
    const inbound = await createInbound(first, server.id, {
      template_id: template.id,
      port: await freePort(),
    });
    const mine = users.slice(i * USERS_PER_SERVER, (i + 1) * USERS_PER_SERVER);
    await bulkGrant(first, server.id, inbound.id, mine);
    const emails = [...(xray.inbounds.get(inbound.tag)?.users.keys() ?? [])];
    assert.equal(emails.length, USERS_PER_SERVER);
    cores.push({ xray, serverId: server.id, tag: inbound.tag, emails });
  }
  startObserver();
});

after(async () => {
  observer.stopped = true;
  await observer.done;
  for (const instance of instances) if (instance.isRunning) await instance.leave().catch(() => {});
  for (const instance of instances.slice(1).reverse()) await instance.app.close();
  await first?.close();
  await stack.run();
});

describe("instances sharing the fleet on one PostgreSQL database", { skip }, () => {
  test("a join splits the servers, a leave and a crash hand them over; nothing is done twice", async () => {
    const a = await startInstance(first);
    await split([a], [SERVERS], "the first instance to hold every server");

    const b = await startInstance(await createTestApp(CONFIG, { sameDatabaseAs: first }));
    const [heldA, heldB] = await split([a, b], [3, 3], "a second instance to get its share");
    assert.equal(new Set([...(heldA ?? []), ...(heldB ?? [])]).size, SERVERS);
    await restartCoresAndCountAdds("two instances");

    // Traffic while a third instance joins: every byte counted once, whoever collects it.
    const base = await usedBytes();
    let sent = 0;
    for (const core of cores) {
      core.emails.forEach((email, k) => {
        core.xray.counters.set(`user>>>${email}>>>traffic>>>uplink`, BigInt(1000 + k));
        sent += 1000 + k;
      });
    }
    const c = await startInstance(await createTestApp(CONFIG, { sameDatabaseAs: first }));
    await split([a, b, c], [2, 2, 2], "a third instance to get its share");
    await waitFor(async () => (await usedBytes()) === base + sent, { what: "every byte to be counted" });
    await waitFor(() => cores.every((core) => [...core.xray.counters.values()].every((v) => v === 0n)), {
      what: "every counter read",
    });
    await restartCoresAndCountAdds("three instances");
    assert.equal(await usedBytes(), base + sent, "counted once");

    await c.leave();
    await split([a, b], [3, 3], "the others to take the servers of the instance that left");

    b.crash();
    await split([a], [SERVERS], "the survivor to take the crashed instance's servers once they expire");
    b.isRunning = false;
    await restartCoresAndCountAdds("the survivor alone");

    assert.ok(observer.samples > 100, `${observer.samples} observations`);
    assert.deepEqual(observer.overlaps, [], "no server held by two instances at one observation");
  });
});

describe("`portcullis serve` processes sharing the fleet on one PostgreSQL database", { skip }, () => {
  test("a second process gets half the servers; killed, its half goes back to the first, added once", async () => {
    const env = { ...CONFIG, PORTCULLIS_RECONCILE_INTERVAL_MS: "200" };
    const store = await sharedStore(stack.add);
    const a = await startPortcullis(stack.add, store, env);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await a.api(method, path, body);
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(await res.json())}`);
      return (await res.json()) as { id: string; tag: string };
    };
    const template = await call(
      "POST",
      "/api/templates",
      kindTemplate({ protocol: "vless", network: "tcp", tls: false }),
    );
    const xrays: { xray: RecordingXray; serverId: string; tag: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const xray = await startRecordingXray(stack.add);
      const port = Number(xray.address.split(":")[1]);
      const server = await call("POST", "/api/servers", {
        name: `proc ${i}`,
        hostname: "127.0.0.1",
        grpc_port: port,
      });
      const inbound = await call("POST", `/api/servers/${server.id}/inbounds`, {
        template_id: template.id,
        port: await freePort(),
      });
      const users = [];
      for (let k = 0; k < 5; k++)
        users.push((await call("POST", "/api/users", { name: `proc ${i}.${k}` })).id);
      await call("POST", `/api/servers/${server.id}/inbounds/${inbound.id}/users/bulk`, { user_ids: users });
      xrays.push({ xray, serverId: server.id, tag: inbound.tag });
    }
    const db = await store.open();
    stack.add(() => db.close());
    const holders = async () => {
      const rows = await db.db.selectFrom("server_leases").select(["server_id", "holder"]).execute();
      return new Map(rows.map((r) => [r.server_id, Number(r.holder.split(":")[1])]));
    };
    const perPid = (held: Map<string, number>, pid: number) =>
      [...held.values()].filter((p) => p === pid).length;
    await waitFor(async () => perPid(await holders(), a.pid) === 4, {
      what: "the first process to hold all 4",
    });

    const b = await startPortcullis(stack.add, store, env);
    await waitFor(
      async () => {
        const held = await holders();
        return held.size === 4 && perPid(held, a.pid) === 2 && perPid(held, b.pid) === 2;
      },
      { what: "the split 2 + 2 between the processes", timeoutMs: 30_000 },
    );

    await b.kill("SIGKILL");
    await waitFor(async () => perPid(await holders(), a.pid) === 4, {
      what: "the survivor to take the killed process's servers",
      timeoutMs: 30_000,
    });
    for (const { xray } of xrays) await xray.restart();
    await waitFor(() => xrays.every(({ xray, tag }) => xray.inbounds.get(tag)?.users.size === 5), {
      what: "every restarted core to get its users back",
      timeoutMs: 30_000,
    });
    for (const { xray, serverId } of xrays) assert.equal(usersSent(xray), 5, `users sent to ${serverId}`);
    assert.ok(a.isAlive());
  });
});
