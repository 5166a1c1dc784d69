// An outcome worked out for one state of a grant is never written over a newer one, on whichever
// dialect DATABASE_URL selects:
// - the store: setSyncState writes only rows still at the revision given; the admission trigger and a
//   new credential move the revision on (and leave the grant pending);
// - a real V2Ray core: a reconcile removes a disabled user; the user is enabled again after the
//   removal and before its outcome is recorded (the interleaving forced through the grant store the
//   reconciler writes with). The grant stays pending and the next tick puts the user back; before
//   revisions it was recorded synced, and the enabled user stayed off the core for good.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";
import type { SyncState } from "../../domain/sync.ts";
import { AccessRepository } from "../access/access.repository.ts";
import { InboundsRepository } from "../inbounds/inbounds.repository.ts";
import { Reconciler } from "./reconciler.ts";
import { RemovalsRepository } from "./removals.repository.ts";
import { ServerSyncRepository } from "./server-sync.repository.ts";
import type { GrantRevision } from "./stores.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
});
needs.after(async () => {
  await t?.close();
  await stack.run();
});

async function stateOf(accessId: string) {
  return t.deps.database.db
    .selectFrom("user_access")
    .select(["sync_state", "sync_revision"])
    .where("id", "=", accessId)
    .executeTakeFirstOrThrow();
}

async function setStatus(userId: string, status: string, fields: Record<string, unknown> = {}) {
  const res = await request(t, "PUT", `/api/users/${userId}`, { status, ...fields });
  assert.equal(res.statusCode, 200, res.body);
}

/** A user granted on a new inbound of a new server of `apiPort`'s core. */
async function granted(apiPort: number, name: string) {
  const created = await request(t, "POST", "/api/users", { name });
  assert.equal(created.statusCode, 201, created.body);
  const userId = (created.json() as { id: string }).id;
  const server = await registerServer(t, apiPort, { name: `${name} core` });
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
  const access = await grant(t, server.id, inbound.id, { user_id: userId });
  return { userId, serverId: server.id, accessId: access.id as string };
}

describe("a grant's outcome is written for the revision it was worked out from", needs, () => {
  test("the store: a stale revision writes nothing; admission changes and new credentials move it on", async () => {
    const core = await startV2rayServer(stack.add);
    const { userId, accessId } = await granted(core.apiPort, "revisions");
    const repository = new AccessRepository(t.deps.database.db);
    const before = await stateOf(accessId);
    assert.equal(before.sync_state, "synced");

    await setStatus(userId, "disabled");
    const disabled = await stateOf(accessId);
    assert.deepEqual(disabled, { sync_state: "pending", sync_revision: before.sync_revision + 1 });
    await setStatus(userId, "active");
    const enabled = await stateOf(accessId);
    assert.deepEqual(enabled, { sync_state: "pending", sync_revision: before.sync_revision + 2 });
    // admitted → admitted: nothing changes on the core, and nothing here
    await setStatus(userId, "on_hold", { on_hold_duration_seconds: 3600 });
    await setStatus(userId, "active");
    assert.deepEqual(await stateOf(accessId), enabled);

    const stale: GrantRevision = { id: accessId, sync_revision: disabled.sync_revision };
    await repository.setSyncState([stale], "synced", null);
    assert.deepEqual(await stateOf(accessId), enabled, "an outcome for the disabled state is dropped");
    await repository.setSyncState([{ id: accessId, sync_revision: enabled.sync_revision }], "synced", null);
    assert.equal((await stateOf(accessId)).sync_state, "synced", "the current revision's is written");

    await repository.setCredential(accessId, "0b5f3c52-52c2-4a39-8b3b-7a6b4a3c1d2e");
    assert.deepEqual(await stateOf(accessId), {
      sync_state: "pending",
      sync_revision: enabled.sync_revision + 1,
    });
  });

  test("a real core: a user enabled while the removal of their disabled self is recorded is put back", async () => {
    const core = await startV2rayServer(stack.add);
    const { userId, serverId, accessId } = await granted(core.apiPort, "racing");
    const onCore = async () => (await probeCore(core.apiAddress, await grantsOf(t.deps, serverId))).present;

    // The store the reconciler writes outcomes with: the real one, with the admin's enable landing
    // between the core call and the write of its outcome (once, when armed).
    const repository = new AccessRepository(t.deps.database.db);
    let armed = false;
    let interleaved = false;
    const hooked = async (rows: readonly GrantRevision[], state: SyncState, error: string | null) => {
      if (armed && !interleaved && rows.some((row) => row.id === accessId)) {
        interleaved = true;
        assert.deepEqual(await onCore(), [], "the removal reached the core before its outcome is written");
        await setStatus(userId, "active");
      }
      return repository.setSyncState(rows, state, error);
    };
    const grants = new Proxy(repository, {
      get(target, key) {
        if (key === "setSyncState") return hooked;
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const { database, services, leases } = t.deps;
    const reconciler = new Reconciler({
      ...{ sync: services.sync, servers: services.servers, grants, leases, logger: testLogger() },
      inbounds: new InboundsRepository(database.db),
      removals: new RemovalsRepository(database.db),
      state: new ServerSyncRepository(database.db),
    });
    await leases.claim([serverId]);
    // A first, full reconcile: the core's state is known from then on, so the next tick is incremental.
    const known = await reconciler.tick(serverId, new AbortController().signal);
    assert.equal(known?.mode, "full", JSON.stringify(known));
    assert.equal((await onCore()).length, 1);
    await setStatus(userId, "disabled");
    armed = true;
    const first = await reconciler.tick(serverId, new AbortController().signal);
    assert.ok(interleaved, "the reconcile recorded an outcome for the grant");
    assert.equal(first?.removed, 1, JSON.stringify(first));
    assert.equal((await stateOf(accessId)).sync_state, "pending", "the stale 'synced' was not written");

    const second = await reconciler.tick(serverId, new AbortController().signal);
    assert.equal(second?.users, 1, JSON.stringify(second));
    assert.equal((await stateOf(accessId)).sync_state, "synced");
    assert.equal((await onCore()).length, 1, "the enabled user is on the core again");
  });
});
