// A full apply puts an inbound's users on the core INLINE in its AddInbound, against the real V2Ray
// core, on whichever dialect DATABASE_URL selects:
// - with the default size cap, an inbound of a few thousand users is applied with one AddInbound and
//   no AddUser at all; the core holds every user (probed) and a sample carries traffic;
// - with a small cap, the users that do not fit go by AddUser after the AddInbound; a user inline and
//   one past the cap both carry traffic, and every user is on the core.
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
} from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, type Kind, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startHttpServer, startV2rayServer } from "../../../test/support/v2ray.ts";
import type { CoreClient } from "../../cores/core-client.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = randomBytes(20_000);
const MANY = 3000;
const FEW = 300;
/** About a third of FEW users fit (≈ 95 bytes each on V2Ray vless/vmess). */
const SMALL_CAP = 10_000;
let wide: TestApp;
let small: TestApp;
let httpPort: number;

needs.before(async () => {
  wide = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  small = await createTestApp(
    { PORTCULLIS_CORE_TIMEOUT_MS: "5000" },
    { sameDatabaseAs: wide, inlineUsersMaxBytes: SMALL_CAP },
  );
  httpPort = await startHttpServer(stack.add, BODY);
});
needs.after(async () => {
  await small?.close();
  await wide?.close();
  await stack.run();
});

/** Counts the pooled client's inbound and user adds (the real calls go through). */
function countCalls(client: CoreClient) {
  const calls = { replace: 0, inline: 0, addUser: 0 };
  const inlineEmails = new Set<string>();
  const { addUser, replaceInbound } = client;
  client.addUser = (ref, user) => {
    calls.addUser += 1;
    return addUser.call(client, ref, user);
  };
  client.replaceInbound = (inbound) => {
    calls.replace += 1;
    calls.inline += inbound.emails.length;
    for (const email of inbound.emails) inlineEmails.add(email);
    return replaceInbound.call(client, inbound);
  };
  return { calls, inlineEmails, restore: () => Object.assign(client, { addUser, replaceInbound }) };
}

/** An inbound with `count` granted users on a fresh core, then the core restarted empty. */
async function grantedThenRestarted(t: TestApp, kind: Kind, count: number) {
  const core = await startV2rayServer(stack.add);
  const server = await registerServer(t, core.apiPort);
  const template = await templateFor(t, kind);
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
  const users = await createUsers(t.deps, count, `inline-${kind.protocol}`);
  const granted = await bulkGrant(t, server.id, inbound.id, users);
  assert.deepEqual(granted.sync, { synced: count, pending: 0, error: 0 });
  // A new core process holds nothing: the next tick applies the inbound in full.
  await core.restart();
  await t.deps.leases.claim([server.id]);
  return { core, server, inbound, users };
}

async function syncedGrants(t: TestApp, serverId: string): Promise<number> {
  const rows = await t.deps.database.db
    .selectFrom("user_access")
    .select("id")
    .where("server_id", "=", serverId)
    .where("sync_state", "=", "synced")
    .execute();
  return rows.length;
}

describe("a full apply carries the users inline in AddInbound", needs, () => {
  test(`${MANY} vless users: one AddInbound, no AddUser, every user on the core`, async (ctx) => {
    const { core, server, inbound, users } = await grantedThenRestarted(
      wide,
      { protocol: "vless", network: "tcp", tls: false },
      MANY,
    );
    const counted = countCalls(await wide.deps.services.servers.clientOf(server.id));
    ctx.after(counted.restore);
    const result = await wide.deps.services.reconciler.tick(server.id, new AbortController().signal);
    assert.equal(result?.mode, "full", JSON.stringify(result));
    assert.equal(result?.is_complete, true, JSON.stringify(result));
    assert.deepEqual(counted.calls, { replace: 1, inline: MANY, addUser: 0 });
    assert.equal(await syncedGrants(wide, server.id), MANY);

    const probe = await probeCore(core.apiAddress, await grantsOf(wide.deps, server.id));
    assert.equal(probe.present.length, MANY, `absent: ${probe.absent.length}`);
    const sample = [users[0], users[MANY >> 1], users.at(-1)].map((userId) => ({
      userId: userId ?? "",
      inboundId: inbound.id,
    }));
    const ports = await startClients(stack.add, wide, sample);
    await waitFor(async () => (await carriesEach(ports, httpPort, BODY)).every(Boolean), {
      timeoutMs: 20_000,
      what: "every sampled user to carry traffic (a fresh client's first request may stall)",
    });
  });

  test(`${FEW} vmess users past a small cap: the rest by AddUser, inline and added users carry traffic`, async (ctx) => {
    const { core, server, inbound } = await grantedThenRestarted(
      small,
      { protocol: "vmess", network: "tcp", tls: false },
      FEW,
    );
    const counted = countCalls(await small.deps.services.servers.clientOf(server.id));
    ctx.after(counted.restore);
    const result = await small.deps.services.reconciler.tick(server.id, new AbortController().signal);
    assert.equal(result?.is_complete, true, JSON.stringify(result));
    const { replace, inline, addUser } = counted.calls;
    assert.equal(replace, 1);
    assert.ok(inline > 0 && inline < FEW, `inline ${inline}`);
    assert.equal(inline + addUser, FEW, JSON.stringify(counted.calls));
    assert.equal(await syncedGrants(small, server.id), FEW);

    const probe = await probeCore(core.apiAddress, await grantsOf(small.deps, server.id));
    assert.equal(probe.present.length, FEW, `absent: ${probe.absent.length}`);
    const rows = await small.deps.database.db
      .selectFrom("user_access")
      .select(["user_id", "proxy_user_id"])
      .where("server_inbound_id", "=", inbound.id)
      .execute();
    const inlined = rows.filter((row) => counted.inlineEmails.has(row.proxy_user_id));
    const added = rows.filter((row) => !counted.inlineEmails.has(row.proxy_user_id));
    assert.equal(inlined.length, inline);
    const picked = [inlined[0], inlined.at(-1), added[0], added.at(-1)];
    const sample = picked.map((row) => ({ userId: row?.user_id ?? "", inboundId: inbound.id }));
    const ports = await startClients(stack.add, small, sample);
    await waitFor(async () => (await carriesEach(ports, httpPort, BODY)).every(Boolean), {
      timeoutMs: 20_000,
      what: "users inline and past the cap to carry traffic",
    });
  });
});
