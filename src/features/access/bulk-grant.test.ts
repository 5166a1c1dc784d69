// Bulk grants (POST …/users/bulk and `portcullis access grant-bulk`) against a real V2Ray core on
// whichever dialect DATABASE_URL selects: new grants are stored and on the core, existing grants and
// unknown users are reported and left alone, bad input is 400/404, a V2Ray shadowsocks inbound's
// one seat is 422 with nothing stored.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { bulkGrant, createUsers, grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";
import { run } from "../../cli/access.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let templateId: string;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort)).id;
  templateId = (await templateFor(t, { protocol: "trojan", network: "tcp", tls: false })).id;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const newInbound = async () =>
  createInbound(t, serverId, { template_id: templateId, port: await freePort() });
const bulkUrl = (inboundId: string) => `/api/servers/${serverId}/inbounds/${inboundId}/users/bulk`;

describe("POST …/inbounds/{inbound_id}/users/bulk", needs, () => {
  test("grants the new users (on the core at once), reports existing grants and unknown users", async () => {
    const inbound = await newInbound();
    const users = await createUsers(t.deps, 5, "bulk");
    const existing = await grant(t, serverId, inbound.id, { user_id: users[0] });
    const unknown = "00000000-0000-4000-8000-00000000abcd";
    const res = await request(t, "POST", bulkUrl(inbound.id), {
      user_ids: [...users, users[1], unknown],
      level: 0,
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.requested, 6);
    assert.equal(body.granted, 4);
    assert.deepEqual(body.already_granted, [existing.user_id]);
    assert.deepEqual(body.unknown_users, [unknown]);
    assert.deepEqual(body.sync, { synced: 4, pending: 0, error: 0 });
    assert.deepEqual(
      body.results.map((r: { user_id: string }) => r.user_id),
      users.slice(1),
    );
    const probe = await probeCore(core.apiAddress, await grantsOf(t.deps, serverId));
    assert.equal(probe.absent.length, 0);
    const again = await bulkGrant(t, serverId, inbound.id, users);
    assert.equal(again.granted, 0, "granting again changes nothing");
  });

  test("bad input: 400 for no ids, more than 10,000, or a non-uuid; 404 for an unknown inbound", async () => {
    const inbound = await newInbound();
    expectProblem(await request(t, "POST", bulkUrl(inbound.id), { user_ids: [] }), 400, "validation_failed");
    const many = Array.from(
      { length: 10_001 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    );
    expectProblem(
      await request(t, "POST", bulkUrl(inbound.id), { user_ids: many }),
      400,
      "validation_failed",
    );
    expectProblem(
      await request(t, "POST", bulkUrl(inbound.id), { user_ids: ["nope"] }),
      400,
      "validation_failed",
    );
    const missing = bulkUrl("00000000-0000-4000-8000-000000000000");
    expectProblem(await request(t, "POST", missing, { user_ids: [inbound.id] }), 404, "not_found");
  });

  test("a V2Ray shadowsocks inbound holds one user: more is 422 core_capacity and nothing is stored", async () => {
    const ss = await templateFor(t, { protocol: "shadowsocks", network: "tcp", tls: false });
    const inbound = await createInbound(t, serverId, { template_id: ss.id, port: await freePort() });
    const users = await createUsers(t.deps, 2, "seat");
    expectProblem(await request(t, "POST", bulkUrl(inbound.id), { user_ids: users }), 422, "core_capacity");
    const rows = await grantsOf(t.deps, serverId);
    assert.equal(rows.filter((row) => row.tag === inbound.tag).length, 0);
    assert.equal((await bulkGrant(t, serverId, inbound.id, users.slice(0, 1))).sync.synced, 1);
  });
});

describe("portcullis access grant-bulk", needs, () => {
  test("takes ids from the arguments or stdin and prints a summary; bad usage exits 2", async () => {
    const inbound = await newInbound();
    const users = await createUsers(t.deps, 3, "cli");
    const out: string[] = [];
    const context = {
      deps: t.deps,
      write: (text: string) => out.push(text),
      writeError: (text: string) => out.push(text),
    };
    const args = ["grant-bulk", "--server", serverId, "--inbound", inbound.id];
    assert.equal(await run([...args, users[0] ?? ""], context), 0);
    assert.equal(await run(args, { ...context, stdin: Readable.from([`${users[1]}\n${users[2]}\n`]) }), 0);
    assert.deepEqual(out, [
      "granted 1 (synced 1, pending 0, error 0); already granted 0; unknown users 0\n",
      "granted 2 (synced 2, pending 0, error 0); already granted 0; unknown users 0\n",
    ]);
    out.length = 0;
    assert.equal(await run(["grant-bulk", "--inbound", inbound.id, users[0] ?? ""], context), 2);
    assert.equal(await run([...args, "not-a-uuid"], context), 2);
    assert.match(out.join(""), /--server and --inbound are required[\s\S]*not a user id: not-a-uuid/);
  });
});
