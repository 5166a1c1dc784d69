// Users created with their grants in one request (POST /api/users with inbound_ids, POST
// /api/users/bulk) against a real V2Ray core, on whichever dialect DATABASE_URL selects: the grants
// are on the core at once, a bad inbound or a full one refuses the whole request with nothing
// stored, and bulk names are numbered. Also POST /api/templates/starters, twice at once.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { grantsOf, probeCore } from "../../../test/support/convergence.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";
import { STARTER_NAMES } from "../templates/starters.ts";
import { numberedNames } from "./enrolment.ts";

const needs = requires("v2ray");
const GIB = 2 ** 30;

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
const usersNamed = async (q: string) =>
  (await request(t, "GET", `/api/users/search?q=${encodeURIComponent(q)}`)).json() as { name: string }[];

describe("POST /api/users with inbound_ids", needs, () => {
  test("one request makes the user with limits and two grants, both on the core", async () => {
    const [a, b] = [await newInbound(), await newInbound()];
    const res = await request(t, "POST", "/api/users", {
      name: "one-dialog",
      data_limit_bytes: 5 * GIB,
      data_limit_reset: "month",
      expire_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      inbound_ids: [a.id, b.id],
    });
    assert.equal(res.statusCode, 201, res.body);
    const user = res.json();
    assert.equal(user.data_limit_bytes, 5 * GIB);
    assert.equal(user.data_limit_reset, "month");
    assert.equal("inbound_ids" in user, false);
    const access = (await request(t, "GET", `/api/users/${user.id}/access`)).json() as {
      server_inbound_id: string;
      sync_state: string;
    }[];
    assert.deepEqual(access.map((g) => g.server_inbound_id).sort(), [a.id, b.id].sort());
    assert.deepEqual(
      access.map((g) => g.sync_state),
      ["synced", "synced"],
    );
    const mine = (await grantsOf(t.deps, serverId)).filter((g) => [a.tag, b.tag].includes(g.tag));
    assert.equal(mine.length, 2);
    assert.deepEqual((await probeCore(core.apiAddress, mine)).absent, []);
  });

  test("an unknown inbound is 400 at its path and no user is made", async () => {
    const a = await newInbound();
    const unknown = "00000000-0000-4000-8000-00000000dead";
    const res = await request(t, "POST", "/api/users", { name: "never-made", inbound_ids: [a.id, unknown] });
    const errors = expectProblem(res, 400, "validation_failed");
    assert.deepEqual(errors, [{ path: "body.inbound_ids.1", message: "no such inbound" }]);
    assert.deepEqual(await usersNamed("never-made"), []);
  });

  test("a V2Ray shadowsocks inbound holds one user: bulk of two is 422 and nothing is made", async () => {
    const ss = await templateFor(t, { protocol: "shadowsocks", network: "tcp", tls: false });
    const inbound = await createInbound(t, serverId, { template_id: ss.id, port: await freePort() });
    const res = await request(t, "POST", "/api/users/bulk", {
      prefix: "seat-",
      count: 2,
      inbound_ids: [inbound.id],
    });
    expectProblem(res, 422, "core_capacity");
    assert.deepEqual(await usersNamed("seat-"), []);
  });

  test("eight creates race for a one-user inbound: one wins, nothing of the other seven remains", async () => {
    // A loser fails either at the up-front capacity check or, when it passed that check before the
    // winner's grant existed, at the grant itself after its user was made (then the undo must remove
    // the user). Which one happens depends on scheduling; either way nothing of a loser may remain.
    const ss = await templateFor(t, { protocol: "shadowsocks", network: "tcp", tls: false });
    const inbound = await createInbound(t, serverId, { template_id: ss.id, port: await freePort() });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request(t, "POST", "/api/users", { name: `racer-${i}`, inbound_ids: [inbound.id] }),
      ),
    );
    const won = results.filter((res) => res.statusCode === 201);
    assert.equal(won.length, 1, results.map((res) => `${res.statusCode} ${res.body}`).join("\n"));
    for (const res of results.filter((r) => r.statusCode !== 201)) {
      assert.ok([409, 422].includes(res.statusCode), res.body);
      assert.equal(res.headers["content-type"], "application/problem+json; charset=utf-8");
    }
    const winner = won[0]?.json() as { id: string; name: string };
    assert.deepEqual(
      (await usersNamed("racer-")).map((user) => user.name),
      [winner.name],
    );
    const access = (await request(t, "GET", `/api/users/${winner.id}/access`)).json() as {
      server_inbound_id: string;
    }[];
    assert.deepEqual(
      access.map((grant) => grant.server_inbound_id),
      [inbound.id],
    );
    const onCore = (await grantsOf(t.deps, serverId)).filter((g) => g.tag === inbound.tag);
    assert.equal(onCore.length, 1, "one grant on the inbound in the database: the losers' were undone");
    assert.deepEqual((await probeCore(core.apiAddress, onCore)).absent, []);
  });
});

describe("POST /api/users/bulk", needs, () => {
  test("twelve users named shop-01 … shop-12 with the same limit, all granted and on the core", async () => {
    const inbound = await newInbound();
    const res = await request(t, "POST", "/api/users/bulk", {
      prefix: "shop-",
      count: 12,
      data_limit_bytes: 10 * GIB,
      inbound_ids: [inbound.id],
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.equal(body.created, 12);
    assert.deepEqual(
      body.users.map((u: { name: string }) => u.name),
      numberedNames("shop-", 1, 12),
    );
    assert.equal(body.users[0].name, "shop-01");
    assert.deepEqual(body.grants, [
      { server_inbound_id: inbound.id, granted: 12, sync: { synced: 12, pending: 0, error: 0 } },
    ]);
    const stored = (await request(t, "GET", `/api/users/${body.users[11].id}`)).json();
    assert.equal(stored.data_limit_bytes, 10 * GIB);
    const grants = (await grantsOf(t.deps, serverId)).filter((g) => g.tag === inbound.tag);
    assert.equal(grants.length, 12);
    assert.deepEqual((await probeCore(core.apiAddress, grants)).absent, []);
  });

  test("bounded: count 0 or 1,001, a blank prefix, an unknown field are 400 with nothing made", async () => {
    for (const body of [
      { prefix: "b-", count: 0 },
      { prefix: "b-", count: 1001 },
      { prefix: "   ", count: 2 },
      { prefix: "b-", count: 2, role: "owner" },
    ]) {
      expectProblem(await request(t, "POST", "/api/users/bulk", body), 400, "validation_failed");
    }
    assert.deepEqual(await usersNamed("b-"), []);
  });

  test("numbers are padded to the width of the last one and may start elsewhere", () => {
    assert.deepEqual(numberedNames("r", 8, 3), ["r08", "r09", "r10"]);
    assert.deepEqual(numberedNames("r", 1, 1), ["r1"]);
    assert.deepEqual(numberedNames("r", 0, 2), ["r0", "r1"]);
  });
});

describe("POST /api/templates/starters", needs, () => {
  test("two installs at once: every starter installed exactly once, the other call skips it", async () => {
    const [first, second] = await Promise.all([
      request(t, "POST", "/api/templates/starters"),
      request(t, "POST", "/api/templates/starters"),
    ]);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(second.statusCode, 200, second.body);
    const outcomes = [...first.json(), ...second.json()] as { name: string; status: string }[];
    for (const name of STARTER_NAMES) {
      const of = outcomes
        .filter((o) => o.name === name)
        .map((o) => o.status)
        .sort();
      assert.deepEqual(of, ["installed", "skipped"], name);
    }
    const again = (await request(t, "POST", "/api/templates/starters")).json() as { status: string }[];
    assert.ok(again.every((o) => o.status === "skipped"));
    const names = ((await request(t, "GET", "/api/templates")).json() as { name: string }[]).map(
      (x) => x.name,
    );
    for (const name of STARTER_NAMES) assert.equal(names.filter((n) => n === name).length, 1);
  });
});
