// POST /api/servers/{id}/sync on whichever dialect DATABASE_URL selects: a V2Ray core that lost its
// state is re-applied (and the summary says what was done); an Xray core (the recording stand-in)
// is listed and diffed, so drift made behind Portcullis' back is repaired while the operator's own
// inbounds stay; with another instance holding the server's lease the sync is handed to it (202).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { bulkGrant, createUsers, grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { startRecordingXray } from "../../../test/support/recording-grpc.ts";
import { requires } from "../../../test/support/requires.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";
import { InboundHandlerConfigSchema } from "../../gen/xray/core_pb.ts";
import { AccessRepository } from "../access/access.repository.ts";
import { InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { ServerLeases } from "./leases.ts";
import { Reconciler } from "./reconciler.ts";
import { RemovalsRepository } from "./removals.repository.ts";
import { ServerSyncRepository } from "./server-sync.repository.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
let t: TestApp;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const sync = (serverId: string) => request(t, "POST", `/api/servers/${serverId}/sync`);

describe("POST /api/servers/{id}/sync", needs, () => {
  test("V2Ray: a core that restarted empty gets every inbound and grant back; the summary counts them", async () => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbounds = [
      await createInbound(t, server.id, { template_id: template.id, port: await freePort() }),
      await createInbound(t, server.id, { template_id: template.id, port: await freePort() }),
    ];
    const users = await createUsers(t.deps, 40, "sync");
    await bulkGrant(t, server.id, inbounds[0]?.id ?? "", users.slice(0, 25));
    await bulkGrant(t, server.id, inbounds[1]?.id ?? "", users.slice(25));
    await core.restart();
    assert.equal((await probeCore(core.apiAddress, await grantsOf(t.deps, server.id))).present.length, 0);

    const res = await sync(server.id);
    assert.equal(res.statusCode, 200, res.body);
    const summary = res.json();
    assert.deepEqual(
      [summary.mode, summary.inbounds, summary.users, summary.errors, summary.is_complete],
      ["full", 2, 40, [], true],
    );
    assert.ok(Number.isInteger(summary.duration_ms));
    const probe = await probeCore(core.apiAddress, await grantsOf(t.deps, server.id));
    assert.equal(probe.present.length, 40);
  });

  test("Xray: missing users are added, strangers and changed users fixed, the operator's own inbound stays", async () => {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(t, Number(xray.address.split(":")[1]));
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    const [kept, lost, changed] = [
      await grant(t, server.id, inbound.id, { name: "kept" }),
      await grant(t, server.id, inbound.id, { name: "lost" }),
      await grant(t, server.id, inbound.id, { name: "changed" }),
    ];
    const users = xray.inbounds.get(inbound.tag)?.users;
    assert.ok(users !== undefined && users.size === 3);
    const keptUser = users.get(kept.proxy_user_id);
    assert.ok(keptUser !== undefined);
    users.delete(lost.proxy_user_id);
    users.set("stranger@x", { ...keptUser, email: "stranger@x" });
    users.set(changed.proxy_user_id, { ...keptUser, email: changed.proxy_user_id });
    const own = create(InboundHandlerConfigSchema, { tag: "operators-own" });
    xray.inbounds.set("operators-own", { config: own, users: new Map() });

    const res = await sync(server.id);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().users, res.json().removed], [2, 1]);
    const after = xray.inbounds.get(inbound.tag)?.users;
    assert.deepEqual(
      [...(after?.keys() ?? [])].sort(),
      [kept, lost, changed].map((g) => g.proxy_user_id).sort(),
    );
    assert.notDeepEqual(
      after?.get(changed.proxy_user_id)?.account,
      keptUser.account,
      "the changed user has its own id again",
    );
    assert.ok(xray.inbounds.has("operators-own"), "inbounds the database does not know are left alone");
  });

  test("404 for an unknown server; 202 when another instance holds the server (PostgreSQL)", async () => {
    expectProblem(await sync("00000000-0000-4000-8000-000000000000"), 404, "not_found");
    if (t.deps.database.dialect !== "postgres") return;
    const server = await registerServer(t, await freePort());
    const expires = new Date(Date.now() + 60_000).toISOString();
    await t.deps.database.db
      .insertInto("server_leases")
      .values({ server_id: server.id, holder: "elsewhere:1:abc", expires_at: expires })
      .execute();
    const res = await sync(server.id);
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().status, "requested");
    assert.notEqual((await t.deps.services.reconciler.state(server.id)).fullSyncRequestedAt, null);
  });

  test("a manual sync runs under the server's lease: a handover waits for it, and losing the lease stops it", async () => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    await bulkGrant(t, server.id, inbound.id, await createUsers(t.deps, 30, "leased"));
    await core.restart();
    // The instance's own leases, except that the lease of this server is lost as soon as the sync asks.
    const { database, services, leases } = t.deps;
    const lost = new AbortController();
    const tracked: { serverIds: readonly string[]; work: Promise<unknown> }[] = [];
    const watched: ServerLeases = {
      holder: leases.holder,
      claim: (ids) => leases.claim(ids),
      track: (serverIds, work) => {
        tracked.push({ serverIds, work });
        leases.track(serverIds, work);
      },
      retain: (ids) => leases.retain(ids),
      holds: (id) => leases.holds(id),
      signalFor: (id) => (id === server.id ? lost.signal : leases.signalFor(id)),
      release: () => leases.release(),
    };
    lost.abort();
    const reconciler = new Reconciler({
      ...{ sync: services.sync, servers: services.servers, leases: watched, logger: testLogger() },
      inbounds: new InboundsRepository(database.db),
      grants: new AccessRepository(database.db),
      removals: new RemovalsRepository(database.db),
      state: new ServerSyncRepository(database.db),
    });
    const summary = await reconciler.syncNow(server.id);
    assert.deepEqual(
      tracked.map((entry) => entry.serverIds),
      [[server.id]],
      "the sync's work is registered for a handover to wait on",
    );
    assert.equal(summary?.is_complete, false, JSON.stringify(summary));
    const probe = await probeCore(core.apiAddress, await grantsOf(t.deps, server.id));
    assert.equal(probe.present.length, 0, "nothing was pushed once the lease was gone");
  });
});
