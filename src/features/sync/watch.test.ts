// Restart detection and the tick decision, with an injected clock: uptime going backwards or Go's
// TotalAlloc shrinking means a new core process; the status follows the polls; Xray is listed on any
// doubt, V2Ray re-applied only when its state is provably gone or unknown.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type CorePoll,
  coreStartedAtMs,
  decideTick,
  hasRestarted,
  NEW_WATCH,
  observe,
  shouldRecheckLayout,
  statusToWrite,
  type TickInput,
  type WatchVerdict,
} from "./watch.ts";

const T0 = Date.parse("2026-11-21T10:00:00.000Z");
const up = (atMs: number, uptimeSeconds: number, totalAllocBytes = 5_000_000): CorePoll => ({
  ok: true,
  atMs,
  uptimeSeconds,
  totalAllocBytes,
});
const down = (atMs: number, isDown = true): CorePoll => ({
  ok: false,
  atMs,
  isDown,
  message: "no",
});

describe("restart detection", () => {
  test("uptime that keeps pace with the clock is the same process, within 2 s of slack", () => {
    const last = { atMs: T0, uptimeSeconds: 100, totalAllocBytes: 10 };
    assert.equal(hasRestarted(last, { atMs: T0 + 3000, uptimeSeconds: 103, totalAllocBytes: 11 }), false);
    assert.equal(hasRestarted(last, { atMs: T0 + 3999, uptimeSeconds: 102, totalAllocBytes: 11 }), false);
  });

  test("uptime behind the last poll plus the elapsed time is a new process", () => {
    const last = { atMs: T0, uptimeSeconds: 100, totalAllocBytes: 10 };
    assert.equal(hasRestarted(last, { atMs: T0 + 3000, uptimeSeconds: 1, totalAllocBytes: 11 }), true);
    assert.equal(hasRestarted(last, { atMs: T0 + 60_000, uptimeSeconds: 50, totalAllocBytes: 11 }), true);
  });

  test("TotalAlloc only grows within one Go process: less is a restart even when uptime looks right", () => {
    const last = { atMs: T0, uptimeSeconds: 1, totalAllocBytes: 9_000_000 };
    assert.equal(hasRestarted(last, { atMs: T0 + 3000, uptimeSeconds: 3, totalAllocBytes: 900_000 }), true);
  });

  test("the start time of a process is poll time minus uptime", () => {
    assert.equal(coreStartedAtMs({ atMs: T0, uptimeSeconds: 60 }), T0 - 60_000);
  });
});

describe("status follows the polls", () => {
  test("unreachable or timed out is offline, other failures error, an answer online", () => {
    const offline = observe(NEW_WATCH, down(T0));
    assert.equal(offline.status, "offline");
    assert.equal(observe(offline.watch, down(T0 + 3000, true)).status, "offline");
    const error = observe(offline.watch, down(T0 + 6000, false));
    assert.equal(error.status, "error");
    const online = observe(error.watch, up(T0 + 9000, 5));
    assert.deepEqual([online.status, online.error, online.cameBack], ["online", null, true]);
    const again = observe(online.watch, up(T0 + 12_000, 8));
    assert.deepEqual([again.cameBack, again.restarted], [false, false]);
  });

  test("the stored status is rewritten whenever it differs from what the poll saw", () => {
    const online = observe(NEW_WATCH, up(T0, 5));
    assert.equal(statusToWrite({ status: "online", last_error: null }, online), false);
    assert.equal(
      statusToWrite({ status: "offline", last_error: "refused" }, online),
      true,
      "a PUT or a failed call",
    );
    assert.equal(statusToWrite({ status: "online", last_error: "old" }, online), true);
    const offline = observe(NEW_WATCH, down(T0));
    assert.equal(statusToWrite({ status: "offline", last_error: "no" }, offline), false);
    assert.equal(statusToWrite({ status: "offline", last_error: "other" }, offline), true);
  });

  test("a restart between two polls is seen on the second", () => {
    const first = observe(NEW_WATCH, up(T0, 500));
    const second = observe(first.watch, up(T0 + 3000, 1));
    assert.equal(second.restarted, true);
    assert.equal(second.startedAtMs, T0 + 2000);
  });
});

function input(verdict: WatchVerdict, overrides: Partial<TickInput> = {}): TickInput {
  return {
    verdict,
    canList: false,
    isLayoutChanged: false,
    appliedStartedAtMs: verdict.startedAtMs ?? null,
    isFullSyncRequested: false,
    isAuditDue: false,
    hasWork: false,
    ...overrides,
  };
}

describe("the tick decision", () => {
  const steady = observe(observe(NEW_WATCH, up(T0, 100)).watch, up(T0 + 3000, 103));
  const restarted = observe(observe(NEW_WATCH, up(T0, 100)).watch, up(T0 + 3000, 1));
  const back = observe(observe(NEW_WATCH, down(T0)).watch, up(T0 + 3000, 103));

  test("V2Ray: nothing to do, or the waiting rows, while the process is the one that got everything", () => {
    assert.deepEqual(decideTick(input(steady)), { mode: "none" });
    assert.equal(decideTick(input(steady, { hasWork: true })).mode, "incremental");
    assert.equal(
      decideTick(input(back, { hasWork: true })).mode,
      "incremental",
      "an outage alone loses nothing",
    );
  });

  test("V2Ray: a restart, or a process that started after the last full apply, is re-applied as empty", () => {
    assert.deepEqual(decideTick(input(restarted, { appliedStartedAtMs: T0 - 100_000 })), {
      mode: "full",
      observe: "restarted",
      reason: "core restarted",
    });
    const later = input(back, { appliedStartedAtMs: T0 - 3_600_000 });
    assert.equal(decideTick(later).mode, "full");
  });

  test("V2Ray: never fully applied, or asked to: everything is applied over whatever is there", () => {
    assert.deepEqual(decideTick(input(steady, { appliedStartedAtMs: null })), {
      mode: "full",
      observe: "unknown",
      reason: "core state unknown",
    });
    assert.equal(decideTick(input(steady, { isFullSyncRequested: true })).mode, "full");
  });

  test("a core that can be listed (Xray 25.x+): any doubt (back after an outage, restart, audit time) is a listing", () => {
    for (const verdict of [back, restarted]) {
      const decision = decideTick(input(verdict, { canList: true }));
      assert.equal(decision.mode === "full" && decision.observe, "listed");
    }
    assert.equal(decideTick(input(steady, { canList: true, isAuditDue: true })).mode, "full");
    assert.deepEqual(decideTick(input(steady, { canList: true })), { mode: "none" });
  });

  test("an Xray that cannot be listed (1.8, 24.x) is reconciled like V2Ray: a restart re-applies everything", () => {
    const decision = decideTick(input(restarted, { canList: false }));
    assert.deepEqual(decision, { mode: "full", observe: "restarted", reason: "core restarted" });
    assert.deepEqual(decideTick(input(steady, { canList: false, isAuditDue: true })), { mode: "none" });
  });

  test("a changed wire layout re-applies everything, even where the core could be listed", () => {
    for (const verdict of [steady, restarted, back]) {
      assert.deepEqual(decideTick(input(verdict, { canList: true, isLayoutChanged: true })), {
        mode: "full",
        observe: "unknown",
        reason: "wire layout changed",
      });
    }
  });

  test("the layout is asked again for a new process or a core seen again, not on a steady poll", () => {
    assert.equal(shouldRecheckLayout(restarted, restarted.startedAtMs ?? null), true);
    assert.equal(shouldRecheckLayout(back, back.startedAtMs ?? null), true);
    assert.equal(shouldRecheckLayout(steady, (steady.startedAtMs ?? 0) - 60_000), true);
    assert.equal(shouldRecheckLayout(steady, steady.startedAtMs ?? null), false);
    assert.equal(shouldRecheckLayout(observe(NEW_WATCH, down(T0)), null), false);
  });

  test("V2Ray: a full apply that stopped halfway on this very process is resumed from the rows, not redone", () => {
    const resumable = { appliedStartedAtMs: null, resumableAtMs: steady.startedAtMs ?? null };
    assert.deepEqual(decideTick(input(steady, resumable)), {
      mode: "incremental",
      reason: "resuming an interrupted full apply",
      resumes: true,
    });
    const afterRestart = { appliedStartedAtMs: T0 - 100_000, resumableAtMs: T0 - 100_000 };
    assert.equal(
      decideTick(input(restarted, afterRestart)).mode,
      "full",
      "the process it was working on is gone",
    );
    const asked = decideTick(input(steady, { ...resumable, isFullSyncRequested: true }));
    assert.equal(asked.mode === "full" && asked.observe, "unknown", "a full sync asked for since wins");
    const listed = decideTick(input(steady, { ...resumable, canList: true }));
    assert.equal(listed.mode === "full" && listed.observe, "listed", "a core that can be listed is listed");
  });

  test("no answer, no decision", () => {
    assert.deepEqual(decideTick(input(observe(NEW_WATCH, down(T0)), { hasWork: true })), { mode: "none" });
  });
});
