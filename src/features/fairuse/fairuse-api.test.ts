// The fair-use settings and user fields at the edge (validation, defaults, 404s), and the block's
// check-then-act: two ticks (two panel instances) blocking or releasing the same user at once write
// it once; whom a tick judges, found without reading every user. Both dialects.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { CompiledQuery, createQueryId, type RootOperationNode } from "kysely";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUser } from "../../../test/support/factories.ts";
import { request } from "../../../test/support/templates.ts";
import { FRESH_STATE } from "./decision.ts";
import { FairUseRepository } from "./fairuse.repository.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

describe("fair-use settings", () => {
  test("defaults, a partial update, and refusals with their paths", async () => {
    const defaults = await request(t, "GET", "/api/fair-use/settings");
    assert.equal(defaults.statusCode, 200, defaults.body);
    assert.deepEqual(defaults.json(), {
      default_ip_limit: 0,
      window_seconds: 600,
      ipv4_per_24: false,
      allow_list: [],
      block_seconds: [600, 3600, 86_400],
      forget_hours: 168,
      warn_grace_seconds: 60,
    });
    const bad = await request(t, "PUT", "/api/fair-use/settings", {
      allow_list: ["10.0.0.0/8", "example.com"],
    });
    assert.equal(bad.statusCode, 422, bad.body);
    const problem = bad.json() as { code: string; errors?: { path: string }[]; details?: { path: string }[] };
    assert.equal(problem.code, "fair_use_settings_invalid");
    assert.match(bad.body, /\/allow_list\/1/);
    for (const body of [
      { nope: 1 },
      { block_seconds: [] },
      { window_seconds: 5 },
      { default_ip_limit: -1 },
    ]) {
      const res = await request(t, "PUT", "/api/fair-use/settings", body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    }
    const ok = await request(t, "PUT", "/api/fair-use/settings", {
      default_ip_limit: 4,
      allow_list: ["2001:db8::/32", "198.51.100.7"],
      ipv4_per_24: true,
    });
    assert.equal(ok.statusCode, 200, ok.body);
    const read = (await request(t, "GET", "/api/fair-use/settings")).json() as Record<string, unknown>;
    assert.deepEqual(
      [read.default_ip_limit, read.allow_list, read.ipv4_per_24, read.window_seconds],
      [4, ["2001:db8::/32", "198.51.100.7"], true, 600],
    );
  });

  test("ip_limit on a user: validated, null takes the default, and the fair-use view", async () => {
    const user = await createUser(t, { ip_limit: 3 });
    assert.equal((user as unknown as { ip_limit: number }).ip_limit, 3);
    assert.equal((await request(t, "PUT", `/api/users/${user.id}`, { ip_limit: -1 })).statusCode, 400);
    assert.equal((await request(t, "PUT", `/api/users/${user.id}`, { ip_limit: 1.5 })).statusCode, 400);
    const cleared = await request(t, "PUT", `/api/users/${user.id}`, { ip_limit: null });
    assert.equal(cleared.statusCode, 200, cleared.body);
    assert.deepEqual([cleared.json().ip_limit, cleared.json().fair_use_blocked_until], [null, null]);
    const view = await request(t, "GET", `/api/users/${user.id}/fair-use`);
    assert.equal(view.statusCode, 200, view.body);
    const body = view.json() as {
      ip_limit: null;
      effective_ip_limit: number;
      addresses: unknown[];
      blocks: unknown[];
    };
    assert.equal(body.ip_limit, null);
    assert.equal(body.effective_ip_limit, 4);
    assert.deepEqual([body.addresses, body.blocks], [[], []]);
    assert.equal((await request(t, "GET", `/api/users/${randomUUID()}/fair-use`)).statusCode, 404);
    assert.equal((await request(t, "GET", "/api/users/not-a-uuid/fair-use")).statusCode, 400);
  });
});

describe("block and release race", () => {
  test("two ticks blocking the same user at once: one block row, one winner; the same for the release", async () => {
    const user = await createUser(t);
    const repo = new FairUseRepository(t.deps.database.db);
    const now = Date.now();
    const block = () => ({
      id: randomUUID(),
      user_id: user.id,
      started_at: new Date(now).toISOString(),
      until: new Date(now + 600_000).toISOString(),
      strike: 1,
      address_count: 3,
      ip_limit: 2,
      addresses: ["127.0.0.2", "127.0.0.3", "127.0.0.4"],
    });
    const state = { ...FRESH_STATE, blockedUntilMs: now + 600_000, warnedAtMs: now, strikes: 1 };
    const won = await Promise.all([
      repo.save(user.id, state, { block: block() }),
      repo.save(user.id, state, { block: block() }),
    ]);
    assert.deepEqual(won.sort(), [false, true]);
    assert.equal((await repo.blocksOf(user.id)).length, 1);
    const blocked = await request(t, "GET", `/api/users/${user.id}`);
    assert.notEqual(blocked.json().fair_use_blocked_until, null);
    const release = { at: new Date(now + 600_000).toISOString(), reason: "ended" };
    const released = await Promise.all([
      repo.save(user.id, { ...state, blockedUntilMs: null }, { release }),
      repo.save(user.id, { ...state, blockedUntilMs: null }, { release }),
    ]);
    assert.deepEqual(released.sort(), [false, true]);
    const [row] = await repo.blocksOf(user.id);
    assert.deepEqual([row?.ended_at, row?.end_reason], [release.at, "ended"]);
    assert.equal((await request(t, "GET", `/api/users/${user.id}`)).json().fair_use_blocked_until, null);
  });
});

describe("whom a tick judges", () => {
  test("the blocked, the warned and the seen users, no one else; on SQLite through indexes, never a scan of users", async () => {
    const repo = new FairUseRepository(t.deps.database.db);
    const now = Date.now();
    const [blocked, warned, released, plain, seen] = await Promise.all(
      Array.from({ length: 5 }, () => createUser(t)),
    );
    assert.ok(blocked && warned && released && plain && seen);
    const until = new Date(now + 600_000).toISOString();
    const record = (userId: string) => ({
      ...{ id: randomUUID(), user_id: userId, started_at: new Date(now).toISOString(), until },
      ...{ strike: 1, address_count: 3, ip_limit: 2, addresses: ["127.0.0.2", "127.0.0.3", "127.0.0.4"] },
    });
    // blocked without a warning on record (warn_grace_seconds 0), warned without a block, and a user
    // whose block ended and whose warning is forgotten: a state row that asks for nothing.
    await repo.save(
      blocked.id,
      { ...FRESH_STATE, blockedUntilMs: now + 600_000, strikes: 1 },
      { block: record(blocked.id) },
    );
    await repo.save(warned.id, { ...FRESH_STATE, warnedAtMs: now }, {});
    await repo.save(
      released.id,
      { ...FRESH_STATE, blockedUntilMs: now + 600_000, strikes: 1 },
      { block: record(released.id) },
    );
    await repo.save(
      released.id,
      { ...FRESH_STATE, strikes: 1, lastReleaseMs: now },
      { release: { at: until, reason: "ended" } },
    );

    const captured: RootOperationNode[] = [];
    const db = t.deps.database.db.withPlugin({
      transformQuery: ({ node }) => {
        captured.push(node);
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const judged = await new FairUseRepository(db).usersToJudge([seen.id]);

    const ids = new Set(judged.map((user) => user.id));
    assert.deepEqual(
      [blocked, warned, seen, released, plain].map((user) => ids.has(user.id)),
      [true, true, true, false, false],
    );
    const judgedBlocked = judged.find((user) => user.id === blocked.id);
    assert.equal(judgedBlocked?.blocked_until_ms, Date.parse(until));
    assert.equal(judged.find((user) => user.id === warned.id)?.state?.warnedAtMs, now);
    if (t.deps.database.dialect !== "sqlite") return;
    assert.ok(captured.length >= 2, "the statements were captured");
    for (const node of captured) {
      const query = db.getExecutor().compileQuery(node, createQueryId());
      const plan = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]),
      );
      const details = plan.rows.map((row) => row.detail);
      assert.ok(
        !details.some((detail) => /^SCAN (u|users)\b/.test(detail)),
        `${query.sql}\n${details.join("\n")}`,
      );
    }
  });
});
