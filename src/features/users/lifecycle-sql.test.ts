// The set-based tick (lifecycle.repository.ts) against the pure decision (lifecycle.ts), on whichever
// dialect DATABASE_URL selects: random users in every status, period and clock position go through
// one SQL tick and through decide(); every user's numbers and every notification must agree.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { read } from "../../db/dialect.ts";
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { LifecycleRepository, type TickResult } from "./lifecycle.repository.ts";
import { decide, type LifecycleEvent, type LifecycleUser } from "./lifecycle.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

const OPTIONS = { thresholds: [80, 95], expiringNoticeSeconds: 3 * 86_400 };
const STATUSES: UserStatus[] = ["active", "disabled", "limited", "expired", "on_hold"];
const PERIODS: DataLimitReset[] = ["no_reset", "day", "week", "month", "month_rolling", "year"];
const HOUR = 3_600_000;

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (p: number) => next() < p,
  };
}

function randomUser(r: ReturnType<typeof random>, now: Date): LifecycleUser & { id: string; name: string } {
  const around = (spreadHours: number) =>
    new Date(
      now.getTime() + (r.int(2 * spreadHours * 60) - spreadHours * 60) * 60_000 + r.int(1000),
    ).toISOString();
  const limit = r.chance(0.3) ? null : r.int(1000);
  const status = r.pick(STATUSES);
  return {
    id: randomUUID(),
    name: `lifecycle ${r.int(1e9)}`,
    status,
    data_limit_bytes: limit,
    data_limit_reset: r.pick(PERIODS),
    used_bytes: r.int(1300),
    created_at: new Date(now.getTime() - r.int(700 * 24) * HOUR - r.int(HOUR)).toISOString(),
    last_reset_at: r.chance(0.5) ? null : around(24 * 40),
    next_reset_at: r.chance(0.3) ? null : around(24 * 3),
    expire_at: r.chance(0.3) ? null : around(24 * 6),
    on_hold_duration_seconds: status === "on_hold" || r.chance(0.2) ? 60 + r.int(86_400 * 30) : null,
    on_hold_timeout_at: r.chance(0.4) ? null : around(12),
    notified_usage_percent: r.pick([0, 0, 80, 95]),
    next_notice_percent: r.pick([0, 0, 80, 95, null]),
    expiring_notified_at: r.chance(0.7) ? null : around(24),
  };
}

function eventsOf(result: TickResult): Map<string, LifecycleEvent[]> {
  const out = new Map<string, LifecycleEvent[]>();
  const add = (id: string, event: LifecycleEvent) => out.set(id, [...(out.get(id) ?? []), event]);
  for (const row of result.activated) add(row.id, { type: "user.activated", from: row.from });
  for (const row of result.limited) add(row.id, { type: "user.limited" });
  for (const row of result.expired) add(row.id, { type: "user.expired" });
  for (const row of result.thresholds) add(row.id, { type: "user.usage_threshold", percent: row.percent });
  for (const row of result.expiring) add(row.id, { type: "user.expiring" });
  return out;
}

const sortEvents = (events: readonly LifecycleEvent[]) => events.map((e) => JSON.stringify(e)).sort();

describe("the SQL tick agrees with the pure decision", () => {
  for (const seed of [1, 2, 3]) {
    test(`2,000 random users, seed ${seed}`, async () => {
      const r = random(seed);
      const now = new Date(Date.UTC(2026, 2 + seed, 10 + seed, 7, 30, 15, 250 * seed));
      const users = Array.from({ length: 2000 }, () => randomUser(r, now));
      const db = t.deps.database.db;
      await db.deleteFrom("users").execute();
      for (let i = 0; i < users.length; i += 200) {
        await db
          .insertInto("users")
          .values(users.slice(i, i + 200).map((u) => ({ ...u, updated_at: u.created_at })))
          .execute();
      }
      const repository = new LifecycleRepository(db, t.deps.database.dialect);
      // No budget for resets here: decide() resets every due user (batches are tested below).
      const result = await repository.tick(now, { ...OPTIONS, resetBatch: 100, resetBudgetMs: 60_000 });
      const rows = await db.selectFrom("users").selectAll().execute();
      const byId = new Map(rows.map((row) => [row.id, row]));
      const events = eventsOf(result);
      let moved = 0;
      let resets = 0;
      for (const before of users) {
        const { id: _id, name: _name, ...numbers } = before;
        const decided = decide(numbers, now, OPTIONS);
        const row = byId.get(before.id);
        assert.ok(row !== undefined);
        const stored: LifecycleUser = {
          status: row.status,
          data_limit_bytes: read.optionalBigint(row.data_limit_bytes),
          data_limit_reset: row.data_limit_reset,
          used_bytes: read.bigint(row.used_bytes),
          created_at: read.timestamp(row.created_at),
          last_reset_at: read.optionalTimestamp(row.last_reset_at),
          next_reset_at: read.optionalTimestamp(row.next_reset_at),
          expire_at: read.optionalTimestamp(row.expire_at),
          on_hold_duration_seconds: read.optionalBigint(row.on_hold_duration_seconds),
          on_hold_timeout_at: read.optionalTimestamp(row.on_hold_timeout_at),
          notified_usage_percent: Number(row.notified_usage_percent),
          next_notice_percent: row.next_notice_percent === null ? null : Number(row.next_notice_percent),
          expiring_notified_at: read.optionalTimestamp(row.expiring_notified_at),
        };
        const context = JSON.stringify(before);
        assert.deepEqual(stored, decided.user, context);
        assert.deepEqual(sortEvents(events.get(before.id) ?? []), sortEvents(decided.events), context);
        if (decided.user.status !== before.status) moved += 1;
        if (decided.isReset) resets += 1;
      }
      assert.equal(result.resets, resets);
      assert.ok(moved > 100 && resets > 50, `a mix worth comparing: ${moved} moved, ${resets} resets`);
    });
  }
});

describe("period resets are spread over ticks (resetBatch, resetBudgetMs)", () => {
  test("batches of resetBatch, the limited first, until the budget is spent; the rest keep their usage until their turn", async () => {
    const db = t.deps.database.db;
    await db.deleteFrom("users").execute();
    const now = new Date("2026-06-02T00:00:05.000Z");
    const users = Array.from({ length: 35 }, (_, i) => ({
      id: randomUUID(),
      name: `reset batch ${i}`,
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
      status: (i % 5 === 4 ? "limited" : "active") as UserStatus,
      data_limit_bytes: 1000,
      data_limit_reset: "day" as const,
      used_bytes: i % 5 === 4 ? 1000 : 500,
      // the most overdue first: a day late for users 0-4
      next_reset_at: i < 5 ? "2026-06-01T00:00:00.000Z" : "2026-06-02T00:00:00.000Z",
      notified_usage_percent: 0,
      next_notice_percent: 80,
    }));
    await db.insertInto("users").values(users).execute();
    const repository = new LifecycleRepository(db, t.deps.database.dialect);
    // A spent budget: one batch of limited users (7, under the batch size), then one of the others.
    const options = { ...OPTIONS, resetBatch: 10, resetBudgetMs: 0 };
    const keptUsage = async () =>
      (await db.selectFrom("users").select("name").where("used_bytes", ">", 0).execute()).map(
        (row) => row.name,
      );

    const first = await repository.tick(now, options);
    assert.equal(first.resets, 17);
    assert.equal(first.activated.length, 7, "all 7 limited users are reset first");
    assert.ok(first.activated.every((row) => row.from === "limited" && row.used_bytes === 0));
    const kept = await keptUsage();
    assert.equal(kept.length, 18, "the others keep their usage until their turn");
    assert.ok(
      [0, 1, 2, 3].every((i) => !kept.includes(`reset batch ${i}`)),
      "the most overdue went first",
    );
    assert.equal((await repository.tick(now, options)).resets, 10);
    assert.equal((await repository.tick(now, options)).resets, 8);
    assert.equal((await repository.tick(now, options)).resets, 0);
    assert.deepEqual(await keptUsage(), []);
    const next = await db.selectFrom("users").select("next_reset_at").distinct().execute();
    assert.deepEqual(
      next.map((row) => read.optionalTimestamp(row.next_reset_at)),
      ["2026-06-03T00:00:00.000Z"],
    );
    // With a budget, batches go on until all due users are reset.
    await db.updateTable("users").set({ next_reset_at: "2026-06-02T00:00:00.000Z", used_bytes: 1 }).execute();
    const all = await repository.tick(now, { ...OPTIONS, resetBatch: 10, resetBudgetMs: 60_000 });
    assert.equal(all.resets, 35);
  });
});

describe("next notices are re-aimed over ticks (noticeBatch, noticeBudgetMs)", () => {
  test("a limit written for many users at once: batches of noticeBatch within the budget, the rest in the next ticks; a notice due is sent in the first tick all the same", async () => {
    const db = t.deps.database.db;
    await db.deleteFrom("users").execute();
    const now = new Date("2026-06-02T00:00:05.000Z");
    // As a bulk limit change leaves them (UsersRepository: next notice 0): every one in the index.
    const users = Array.from({ length: 23 }, (_, i) => ({
      id: randomUUID(),
      name: `notice batch ${i}`,
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
      status: "active" as UserStatus,
      data_limit_bytes: 1000,
      used_bytes: i === 22 ? 850 : 10,
      notified_usage_percent: 0,
      next_notice_percent: 0,
    }));
    await db.insertInto("users").values(users).execute();
    const repository = new LifecycleRepository(db, t.deps.database.dialect);
    const options = { ...OPTIONS, noticeBatch: 5, noticeBudgetMs: 0 };
    const unaimed = async () =>
      Number(
        (
          await db
            .selectFrom("users")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("next_notice_percent", "=", 0)
            .executeTakeFirstOrThrow()
        ).n,
      );

    const first = await repository.tick(now, options);
    assert.deepEqual(
      first.thresholds.map((row) => [row.name, row.percent]),
      [["notice batch 22", 80]],
      "the user past 80 % is told in the first tick",
    );
    assert.equal(await unaimed(), 22 - 5, "one batch of 5 re-aimed with the budget spent");
    for (const left of [12, 7, 2, 0]) {
      await repository.tick(now, options);
      assert.equal(await unaimed(), left);
    }
    const aimed = await db.selectFrom("users").select(["name", "next_notice_percent"]).execute();
    for (const row of aimed) {
      assert.equal(row.next_notice_percent, row.name === "notice batch 22" ? 95 : 80, row.name);
    }
    assert.deepEqual((await repository.tick(now, options)).thresholds, [], "nothing told twice");
    // With a budget, batches go on until every next notice is aimed.
    await db.updateTable("users").set({ next_notice_percent: 0 }).execute();
    await repository.tick(now, { ...OPTIONS, noticeBatch: 5, noticeBudgetMs: 60_000 });
    assert.equal(await unaimed(), 0);
  });
});
