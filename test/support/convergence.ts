// Helpers for the convergence tests: many users and grants fast, the background jobs of `serve`
// in-process, a probe that tells which users a V2Ray core really holds (it has no listing), one
// v2ray client process with a SOCKS port per user, and waiting for a server to converge.
import assert from "node:assert/strict";
import type { Logger } from "pino";
import type { CoreProtocol } from "../../src/cores/core-types.ts";
import { GrpcCoreClient } from "../../src/cores/grpc-core-client.ts";
import { buildUser } from "../../src/cores/inbound-builder/build.ts";
import type { Deps } from "../../src/deps.ts";
import { collectTrafficJob } from "../../src/jobs/collect-traffic.ts";
import { lifecycleJob } from "../../src/jobs/lifecycle.ts";
import { type ReconcileJob, reconcileJob } from "../../src/jobs/reconcile.ts";
import { type Job, type RunningJobs, startJobs } from "../../src/jobs/runner.ts";
import { CoreConflictError } from "../../src/lib/errors.ts";
import { limiter, settleAll } from "../../src/lib/limiter.ts";
import type { TestApp } from "./app.ts";
import { toV2rayOutbound } from "./link-client-configs.ts";
import { decodeLink } from "./link-decoder.ts";
import { waitFor } from "./poll.ts";
import { freePorts } from "./ports.ts";
import { request } from "./templates.ts";
import { type Cleanup, fetchViaSocks, startV2rayClient } from "./v2ray.ts";

/** Grants in the fault tests; the benchmark covers the large sizes (bench/convergence.ts). */
export const FAULT_GRANTS = Number(process.env.PORTCULLIS_FAULT_GRANTS ?? 300);

export async function createUsers(deps: Deps, count: number, prefix = "user"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await deps.services.users.create({ name: `${prefix} ${i}` })).id);
  return ids;
}

export type BulkBody = {
  granted: number;
  sync: { synced: number; pending: number; error: number };
  results: { user_id: string; access_id: string; proxy_user_id: string; sync_state: string }[];
};

export async function bulkGrant(t: TestApp, serverId: string, inboundId: string, userIds: string[]) {
  const res = await request(t, "POST", `/api/servers/${serverId}/inbounds/${inboundId}/users/bulk`, {
    user_ids: userIds,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as BulkBody;
}

/** The reconcile and traffic jobs as `serve` runs them, with test intervals. */
export function startConvergence(
  deps: Deps,
  logger: Logger,
  intervals: { reconcileMs: number; trafficMs?: number; lifecycleMs?: number },
): { running: RunningJobs; reconcile: ReconcileJob } {
  const { leases } = deps;
  const reconcile = reconcileJob({
    ...{ reconciler: deps.services.reconciler, servers: deps.services.servers, leases, logger },
    ...{ intervalMs: intervals.reconcileMs, concurrency: 4 },
  });
  const jobs: Job[] = [reconcile];
  if (intervals.trafficMs !== undefined) {
    const traffic = deps.services.traffic;
    jobs.push(
      collectTrafficJob({
        ...{ traffic, leases, logger, intervalMs: intervals.trafficMs, concurrency: 4 },
        ...(intervals.lifecycleMs === undefined ? {} : { afterFold: () => deps.services.lifecycle.tick() }),
      }),
    );
  }
  if (intervals.lifecycleMs !== undefined) {
    jobs.push(lifecycleJob(deps.services.lifecycle, logger, intervals.lifecycleMs));
  }
  return { running: startJobs(jobs, logger), reconcile };
}

export type ProbeGrant = { tag: string; protocol: CoreProtocol; email: string; credential: string };

/**
 * Which of these users the V2Ray core holds: AddUser of a user it has is "already exists". One it
 * lacks is added by the probe, so it is removed again at once and the core is left as it was.
 */
export async function probeCore(address: string, grants: readonly ProbeGrant[]) {
  const client = new GrpcCoreClient({ address, layout: "v2ray-4", timeoutMs: 3000 });
  const present: string[] = [];
  const absent: string[] = [];
  try {
    await settleAll(grants, limiter(64), async (grant) => {
      const built = buildUser(grant.protocol, "v2ray", { email: grant.email, credential: grant.credential });
      if (!built.ok) throw new Error(JSON.stringify(built.problems));
      try {
        await client.addUser({ tag: grant.tag, protocol: grant.protocol }, built.value);
        absent.push(grant.email);
        await client.removeUser(grant.tag, grant.email);
      } catch (error) {
        if (!(error instanceof CoreConflictError)) throw error;
        present.push(grant.email);
      }
    });
  } finally {
    client.close();
  }
  return { present, absent };
}

/** The grants of a server as probe input, read from the database. */
export async function grantsOf(deps: Deps, serverId: string): Promise<ProbeGrant[]> {
  const rows = await deps.database.db
    .selectFrom("user_access as a")
    .innerJoin("server_inbounds as i", "i.id", "a.server_inbound_id")
    .select(["i.tag", "i.link_params", "a.proxy_user_id", "a.credential"])
    .where("a.server_id", "=", serverId)
    .execute();
  return rows.map((row) => ({
    tag: row.tag,
    protocol: (JSON.parse(row.link_params) as { protocol: CoreProtocol }).protocol,
    email: row.proxy_user_id,
    credential: row.credential,
  }));
}

/** Every inbound and grant of the server synced and no removal queued. */
export async function waitConverged(deps: Deps, serverId: string, timeoutMs = 30_000): Promise<void> {
  const db = deps.database.db;
  await waitFor(
    async () => {
      const inbounds = await db
        .selectFrom("server_inbounds")
        .select("id")
        .where("server_id", "=", serverId)
        .where("sync_state", "!=", "synced")
        .execute();
      const grants = await db
        .selectFrom("user_access")
        .select("id")
        .where("server_id", "=", serverId)
        .where("sync_state", "!=", "synced")
        .execute();
      const removals = await db
        .selectFrom("core_removals")
        .select("id")
        .where("server_id", "=", serverId)
        .execute();
      return inbounds.length + grants.length + removals.length === 0;
    },
    { timeoutMs, what: `server ${serverId} to converge`, intervalMs: 50 },
  );
}

/** One v2ray client process with a SOCKS port per grant's link; returns the ports in order. */
export async function startClients(
  cleanup: Cleanup,
  t: TestApp,
  grants: { userId: string; inboundId: string }[],
) {
  const ports = await freePorts(grants.length);
  const inbounds = [];
  const outbounds = [];
  const rules = [];
  for (const [index, grant] of grants.entries()) {
    const config = await t.deps.services.access.userInboundConfig(grant.userId, grant.inboundId);
    outbounds.push(toV2rayOutbound(decodeLink(config.uri), { tag: `out-${index}` }));
    inbounds.push({
      tag: `in-${index}`,
      listen: "127.0.0.1",
      port: ports[index],
      protocol: "socks",
      settings: { auth: "noauth" },
    });
    rules.push({ type: "field", inboundTag: [`in-${index}`], outboundTag: `out-${index}` });
  }
  const config = { log: { loglevel: "warning" }, inbounds, outbounds, routing: { rules } };
  await startV2rayClient(cleanup, config, ports);
  return ports;
}

/** Whether each SOCKS port gets the whole page through (short deadlines: a refused user hangs or closes). */
export async function carriesEach(ports: number[], httpPort: number, body: Buffer): Promise<boolean[]> {
  return Promise.all(
    ports.map(async (port) => {
      try {
        const res = await fetchViaSocks(port, { port: httpPort, path: "/" }, 3000);
        return res.status === 200 && res.body.equals(body);
      } catch {
        return false;
      }
    }),
  );
}
