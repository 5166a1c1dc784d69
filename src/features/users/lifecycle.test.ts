// The lifecycle decision without I/O: period boundaries in UTC (day, Monday weeks, months, rolling
// months from the user's own day clamped to the month's end, years), and one tick's moves: on-hold
// timeout, reset re-admitting a limited user, expiry before limit, re-admission, thresholds once per
// period, the expiring notice once.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { monthsAfter, nextResetAt } from "../../lib/periods.ts";
import { decide, type LifecycleUser, reachedThreshold } from "./lifecycle.ts";

const OPTIONS = { thresholds: [80, 95], expiringNoticeSeconds: 3 * 86_400 };
const NOW = new Date("2026-03-15T12:00:00.000Z");

function user(overrides: Partial<LifecycleUser> = {}): LifecycleUser {
  return {
    status: "active",
    data_limit_bytes: null,
    data_limit_reset: "no_reset",
    used_bytes: 0,
    created_at: "2026-01-31T10:30:00.000Z",
    last_reset_at: null,
    next_reset_at: null,
    expire_at: null,
    on_hold_duration_seconds: null,
    on_hold_timeout_at: null,
    notified_usage_percent: 0,
    next_notice_percent: 0,
    expiring_notified_at: null,
    ...overrides,
  };
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

describe("period boundaries (UTC)", () => {
  test("day, week from Monday, month and year start at the next calendar boundary", () => {
    const at = new Date("2026-03-15T12:00:00.000Z"); // a Sunday
    const anchor = "2020-01-01T00:00:00.000Z";
    assert.equal(iso(nextResetAt("day", anchor, at)), "2026-03-16T00:00:00.000Z");
    assert.equal(iso(nextResetAt("week", anchor, at)), "2026-03-16T00:00:00.000Z", "Sunday → Monday");
    const monday = new Date("2026-03-16T00:00:00.000Z");
    assert.equal(iso(nextResetAt("week", anchor, monday)), "2026-03-23T00:00:00.000Z", "strictly after");
    assert.equal(iso(nextResetAt("month", anchor, at)), "2026-04-01T00:00:00.000Z");
    assert.equal(
      iso(nextResetAt("month", anchor, new Date("2026-12-31T23:59:59.999Z"))),
      "2027-01-01T00:00:00.000Z",
    );
    assert.equal(iso(nextResetAt("year", anchor, at)), "2027-01-01T00:00:00.000Z");
    assert.equal(nextResetAt("no_reset", anchor, at), null);
  });

  test("month_rolling keeps the user's own day and time, clamped to the month's last day", () => {
    const anchor = "2026-01-31T10:30:00.000Z";
    assert.equal(
      iso(nextResetAt("month_rolling", anchor, new Date("2026-02-01T00:00:00Z"))),
      "2026-02-28T10:30:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", anchor, new Date("2026-02-28T10:30:00Z"))),
      "2026-03-31T10:30:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", anchor, new Date("2028-02-01T00:00:00Z"))),
      "2028-02-29T10:30:00.000Z",
      "leap year",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", anchor, new Date("2026-12-31T10:30:00Z"))),
      "2027-01-31T10:30:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", anchor, new Date(anchor))),
      "2026-02-28T10:30:00.000Z",
      "a new user",
    );
    assert.equal(monthsAfter(new Date("2026-03-31T00:00:00Z"), 1).toISOString(), "2026-04-30T00:00:00.000Z");
  });
});

describe("one tick", () => {
  test("a user at the limit is limited; a reset due re-admits them at once with zero usage", () => {
    const full = user({ data_limit_bytes: 1000, used_bytes: 1000 });
    const first = decide(full, NOW, OPTIONS);
    assert.equal(first.user.status, "limited");
    assert.deepEqual(
      first.events.map((e) => e.type),
      ["user.limited", "user.usage_threshold"],
    );
    const due = user({
      status: "limited",
      data_limit_bytes: 1000,
      used_bytes: 1000,
      data_limit_reset: "month",
      next_reset_at: "2026-03-15T11:59:59.999Z",
      notified_usage_percent: 95,
    });
    const reset = decide(due, NOW, OPTIONS);
    assert.equal(reset.isReset, true);
    assert.deepEqual(
      [reset.user.status, reset.user.used_bytes, reset.user.last_reset_at, reset.user.next_reset_at],
      ["active", 0, NOW.toISOString(), "2026-04-01T00:00:00.000Z"],
    );
    assert.equal(reset.user.notified_usage_percent, 0, "thresholds re-armed");
    assert.deepEqual(reset.events, [{ type: "user.activated", from: "limited" }]);
  });

  test("a period without a boundary gets one from now, and is not reset by it", () => {
    const decided = decide(user({ data_limit_reset: "day", used_bytes: 5 }), NOW, OPTIONS);
    assert.deepEqual(
      [decided.user.next_reset_at, decided.isReset, decided.user.used_bytes],
      ["2026-03-16T00:00:00.000Z", false, 5],
    );
  });

  test("expiry wins over the limit; a later expiry re-admits (or limits when full)", () => {
    const past = "2026-03-15T11:00:00.000Z";
    const both = decide(user({ expire_at: past, data_limit_bytes: 10, used_bytes: 10 }), NOW, OPTIONS);
    assert.equal(both.user.status, "expired");
    assert.deepEqual(
      both.events.map((e) => e.type),
      ["user.expired"],
      "no usage notice for an expired user",
    );
    const later = "2026-04-15T00:00:00.000Z";
    const back = decide(user({ status: "expired", expire_at: later }), NOW, OPTIONS);
    assert.deepEqual(
      [back.user.status, back.events],
      ["active", [{ type: "user.activated", from: "expired" }]],
    );
    const full = decide(
      user({ status: "expired", expire_at: null, data_limit_bytes: 1, used_bytes: 2 }),
      NOW,
      OPTIONS,
    );
    assert.equal(full.user.status, "limited");
    const limitedRaised = decide(
      user({ status: "limited", data_limit_bytes: 100, used_bytes: 2 }),
      NOW,
      OPTIONS,
    );
    assert.equal(limitedRaised.user.status, "active");
  });

  test("on-hold: the timeout starts the clock (expire_at = now + duration); disabled users never move", () => {
    const held = user({
      status: "on_hold",
      on_hold_duration_seconds: 86_400,
      on_hold_timeout_at: "2026-03-15T12:00:00.000Z",
    });
    const started = decide(held, NOW, OPTIONS);
    assert.deepEqual([started.user.status, started.user.expire_at], ["active", "2026-03-16T12:00:00.000Z"]);
    assert.deepEqual(started.events[0], { type: "user.activated", from: "on_hold" });
    const waiting = decide({ ...held, on_hold_timeout_at: "2026-03-15T12:00:00.001Z" }, NOW, OPTIONS);
    assert.deepEqual([waiting.user.status, waiting.events], ["on_hold", []]);
    const disabled = user({ status: "disabled", expire_at: "2020-01-01T00:00:00.000Z", data_limit_bytes: 0 });
    assert.deepEqual(decide(disabled, NOW, OPTIONS), { user: disabled, isReset: false, events: [] });
  });

  test("usage thresholds: the highest reached, once per period", () => {
    assert.equal(reachedThreshold(79, 100, [80, 95]), 0);
    assert.equal(reachedThreshold(80, 100, [80, 95]), 80);
    assert.equal(reachedThreshold(96, 100, [95, 80]), 95);
    const at85 = decide(user({ data_limit_bytes: 100, used_bytes: 85 }), NOW, OPTIONS);
    assert.deepEqual(at85.events, [{ type: "user.usage_threshold", percent: 80 }]);
    const again = decide(at85.user, NOW, OPTIONS);
    assert.deepEqual(again.events, [], "not twice");
    const at99 = decide({ ...at85.user, used_bytes: 99 }, NOW, OPTIONS);
    assert.deepEqual(at99.events, [{ type: "user.usage_threshold", percent: 95 }]);
  });

  test("expiring: once, within the notice window, only while active", () => {
    const soon = user({ expire_at: "2026-03-17T12:00:00.000Z" });
    const first = decide(soon, NOW, OPTIONS);
    assert.deepEqual(
      [first.events, first.user.expiring_notified_at],
      [[{ type: "user.expiring" }], NOW.toISOString()],
    );
    assert.deepEqual(decide(first.user, NOW, OPTIONS).events, []);
    assert.deepEqual(
      decide(user({ expire_at: "2026-03-19T12:00:00.000Z" }), NOW, OPTIONS).events,
      [],
      "too early",
    );
    assert.deepEqual(decide(soon, NOW, { ...OPTIONS, expiringNoticeSeconds: 0 }).events, [], "off");
  });
});
