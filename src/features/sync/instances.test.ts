// Killing Portcullis itself: `portcullis serve` as real processes on one database. SIGKILL in the
// middle of a bulk grant leaves the database consistent and the next process makes the core match
// it; with two instances on one PostgreSQL database, killing the one that holds a server's lease
// hands the server to the other within the lease time, and a core restart is still repaired.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FAULT_GRANTS, type ProbeGrant, probeCore } from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import {
  type PortcullisProcess,
  type Store,
  sharedStore,
  startPortcullis,
} from "../../../test/support/portcullis-process.ts";
import { freePort } from "../../../test/support/ports.ts";
import { kindTemplate } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";
import { GrpcCoreClient } from "../../cores/grpc-core-client.ts";
import type { DatabaseHandle } from "../../db/connection.ts";
import { limiter, settleAll } from "../../lib/limiter.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
needs.after(() => stack.run());

const FAST = {
  PORTCULLIS_RECONCILE_INTERVAL_MS: "200",
  PORTCULLIS_LEASE_TTL_MS: "1500",
  PORTCULLIS_CORE_TIMEOUT_MS: "2000",
};

type Json = Record<string, unknown>;

async function call(
  p: PortcullisProcess,
  method: string,
  path: string,
  body?: unknown,
  expected = [200, 201],
) {
  const res = await p.api(method, path, body);
  const json = (await res.json()) as Json;
  assert.ok(expected.includes(res.status), `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A server on the core with one VMess inbound (the slowest users to add, so a push takes a while). */
async function provision(p: PortcullisProcess, core: V2rayServer) {
  const server = await call(p, "POST", "/api/servers", {
    name: "core",
    hostname: "127.0.0.1",
    grpc_port: core.apiPort,
  });
  const template = await call(
    p,
    "POST",
    "/api/templates",
    kindTemplate({ protocol: "vmess", network: "tcp", tls: false }),
  );
  const inbound = await call(p, "POST", `/api/servers/${server.id}/inbounds`, {
    template_id: template.id,
    port: await freePort(),
  });
  return { serverId: String(server.id), inboundId: String(inbound.id) };
}

async function createUsers(p: PortcullisProcess, count: number): Promise<string[]> {
  const results = await settleAll([...Array(count).keys()], limiter(16), async (i) =>
    String((await call(p, "POST", "/api/users", { name: `proc user ${i}` })).id),
  );
  return results.map((r) => (r.status === "fulfilled" ? r.value : assert.fail(String(r.reason))));
}

async function grantsIn(db: DatabaseHandle, inboundId: string) {
  const rows = await db.db
    .selectFrom("user_access as a")
    .innerJoin("server_inbounds as i", "i.id", "a.server_inbound_id")
    .select(["i.tag", "a.proxy_user_id", "a.credential", "a.sync_state", "a.user_id"])
    .where("a.server_inbound_id", "=", inboundId)
    .execute();
  const probe: ProbeGrant[] = rows.map((r) => ({
    tag: r.tag,
    protocol: "vmess",
    email: r.proxy_user_id,
    credential: r.credential,
  }));
  return { rows, probe };
}

/** The start time of the core process that last got the full state (the probe must not race an apply). */
async function appliedStartedAt(db: DatabaseHandle, serverId: string): Promise<string | null> {
  const row = await db.db
    .selectFrom("server_sync")
    .select("applied_core_started_at")
    .where("server_id", "=", serverId)
    .executeTakeFirst();
  const value = row?.applied_core_started_at ?? null;
  return value instanceof Date ? value.toISOString() : value;
}

async function openStore(store: Store): Promise<DatabaseHandle> {
  const db = await store.open();
  stack.add(() => db.close());
  return db;
}

describe("killing Portcullis", needs, () => {
  test(`SIGKILL during a bulk grant of ${FAULT_GRANTS} users: the database is consistent and the core converges to it`, async (ctx) => {
    const core = await startV2rayServer(stack.add);
    const store = await sharedStore(stack.add);
    const first = await startPortcullis(stack.add, store, FAST);
    const { serverId, inboundId } = await provision(first, core);
    const users = await createUsers(first, FAULT_GRANTS);
    const db = await openStore(store);

    // GetSysStats is the only signal a V2Ray core gives without changing it: VMess users cost ~35 KB
    // each (probe §10): kill once about a third of them can be on the core.
    const stats = new GrpcCoreClient({ address: core.apiAddress, layout: "v2ray-4" });
    stack.add(() => stats.close());
    const baseline = (await stats.getSysStats()).totalAllocBytes;
    const bulk = first.api("POST", `/api/servers/${serverId}/inbounds/${inboundId}/users/bulk`, {
      user_ids: users,
    });
    bulk.catch(() => {}); // the process dies under it
    await waitFor(
      async () =>
        (await grantsIn(db, inboundId)).rows.length > 0 &&
        (await stats.getSysStats()).totalAllocBytes > baseline + (35_000 * FAULT_GRANTS) / 3,
      { what: "the push to be under way", timeoutMs: 30_000, intervalMs: 2 },
    );
    await first.kill("SIGKILL");
    const atKill = await grantsIn(db, inboundId);
    const onCoreAtKill = (await probeCore(core.apiAddress, atKill.probe)).present.length;
    ctx.diagnostic(`killed with ${atKill.rows.length} rows stored, ${onCoreAtKill} users on the core`);
    assert.equal(atKill.rows.length, FAULT_GRANTS, "the bulk grant's rows are all stored or none");

    await startPortcullis(stack.add, store, FAST);
    await waitFor(
      async () =>
        (await grantsIn(db, inboundId)).rows.every((r) => r.sync_state === "synced") &&
        (await appliedStartedAt(db, serverId)) !== null,
      { what: "every grant synced by the next process", timeoutMs: 30_000 },
    );
    const after = await grantsIn(db, inboundId);
    assert.equal(new Set(after.rows.map((r) => r.user_id)).size, FAULT_GRANTS, "one grant per user");
    const probe = await probeCore(core.apiAddress, after.probe);
    assert.equal(probe.present.length, FAULT_GRANTS, `missing on the core: ${probe.absent.length}`);
    assert.ok(core.isAlive());
  });

  test("two instances on one PostgreSQL database: the survivor takes the server over and repairs a restart", {
    skip: process.env.DATABASE_URL === undefined ? "needs PostgreSQL (DATABASE_URL)" : false,
  }, async (ctx) => {
    const core = await startV2rayServer(stack.add);
    const store = await sharedStore(stack.add);
    const a = await startPortcullis(stack.add, store, FAST);
    const b = await startPortcullis(stack.add, store, FAST);
    const { serverId, inboundId } = await provision(a, core);
    const users = await createUsers(b, 30);
    await call(b, "POST", `/api/servers/${serverId}/inbounds/${inboundId}/users/bulk`, { user_ids: users });
    const db = await openStore(store);
    const holderOf = async () =>
      (
        await db.db
          .selectFrom("server_leases")
          .select("holder")
          .where("server_id", "=", serverId)
          .executeTakeFirst()
      )?.holder;
    const pidOf = (holder: string | undefined) => Number(holder?.split(":")[1]);
    const holder = await waitFor(holderOf, { what: "a lease on the server" });
    const [owner, other] = pidOf(holder) === a.pid ? [a, b] : [b, a];
    assert.equal(pidOf(holder), owner.pid);

    await owner.kill("SIGKILL");
    const killedAt = performance.now();
    await waitFor(async () => pidOf(await holderOf()) === other.pid, {
      what: "the survivor to take the lease",
    });
    const takeoverMs = performance.now() - killedAt;
    ctx.diagnostic(`lease taken over ${Math.round(takeoverMs)} ms after the holder was killed`);

    const appliedBefore = await waitFor(() => appliedStartedAt(db, serverId), { what: "a full apply" });
    await core.kill("SIGKILL");
    await core.restart();
    await waitFor(async () => (await appliedStartedAt(db, serverId)) !== appliedBefore, {
      what: "the survivor to re-apply the restarted core",
      timeoutMs: 20_000,
    });
    const { probe } = await grantsIn(db, inboundId);
    assert.equal((await probeCore(core.apiAddress, probe)).present.length, probe.length);
    assert.ok(other.isAlive());
  });
});
