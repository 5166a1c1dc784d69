// The login throttle's budgets, with an injected clock: per client and username, per client, and
// the per-username ceiling that many addresses share, which a known-good address passes.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { defaultThrottle, LoginThrottle } from "./throttle.ts";

function throttle() {
  let nowMs = 1_000_000;
  const t = new LoginThrottle(defaultThrottle, () => nowMs);
  return {
    t,
    advance(ms: number) {
      nowMs += ms;
    },
    fail(ip: string, user: string) {
      t.reserve(ip, user).failed();
    },
    isAllowed(ip: string, user: string): boolean {
      try {
        t.reserve(ip, user).release();
        return true;
      } catch {
        return false;
      }
    },
  };
}

describe("login throttle", () => {
  test("a running attempt counts against the budget before it fails", () => {
    const { t } = throttle();
    const running = Array.from({ length: 5 }, () => t.reserve("10.0.0.1", "admin"));
    assert.throws(() => t.reserve("10.0.0.1", "admin"), { code: "rate_limited" });
    running[0]?.release();
    t.reserve("10.0.0.1", "admin").release();
  });

  test("failures leave the window after 15 minutes", () => {
    const h = throttle();
    for (let i = 0; i < 5; i++) h.fail("10.0.0.1", "admin");
    assert.equal(h.isAllowed("10.0.0.1", "admin"), false);
    h.advance(15 * 60_000 + 1);
    assert.equal(h.isAllowed("10.0.0.1", "admin"), true);
  });

  test("past the per-username ceiling every new address waits, a known-good one does not", () => {
    const h = throttle();
    h.t.reserve("192.0.2.7", "Admin").succeeded();
    for (let i = 0; i < 50; i++) h.fail(`10.1.${i >> 8}.${i & 255}`, "admin");
    assert.equal(h.isAllowed("10.9.9.9", "admin"), false);
    assert.equal(h.isAllowed("192.0.2.7", "admin"), true);
    // ...until that address fails itself.
    h.fail("192.0.2.7", "admin");
    assert.equal(h.isAllowed("192.0.2.7", "admin"), false);
  });

  test("a success clears that client's failures for the username only", () => {
    const h = throttle();
    for (let i = 0; i < 4; i++) h.fail("10.0.0.2", "admin");
    h.t.reserve("10.0.0.2", "admin").succeeded();
    for (let i = 0; i < 4; i++) h.fail("10.0.0.2", "admin");
    assert.equal(h.isAllowed("10.0.0.2", "admin"), true);
  });

  test("an attempt ends once: failed() after release() records nothing", () => {
    const h = throttle();
    for (let i = 0; i < 10; i++) {
      const attempt = h.t.reserve("10.0.0.3", "admin");
      attempt.release();
      attempt.failed();
    }
    assert.equal(h.isAllowed("10.0.0.3", "admin"), true);
  });
});
