// The renewal rules without I/O: due at two thirds of the lifetime, exponential backoff after failures,
// and the status the API shows for each moment of a certificate's life.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  backoffMs,
  DEFAULT_BACKOFF,
  decideRenewal,
  deriveStatus,
  renewalDueAt,
  type Validity,
} from "./renewal.ts";

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const start = new Date("2027-01-01T00:00:00.000Z");
/** A 90-day certificate: due on day 60. */
const ninetyDays: Validity = { notBefore: start, notAfter: new Date(start.getTime() + 90 * DAY_MS) };
const day = (n: number) => new Date(start.getTime() + n * DAY_MS);

describe("when a renewal is due", () => {
  test("two thirds of the lifetime: day 60 of 90", () => {
    assert.equal(renewalDueAt(ninetyDays).toISOString(), day(60).toISOString());
  });

  test("before that moment it waits until then; from it on it is due", () => {
    const state = { isAutoRenew: true, validity: ninetyDays, failureCount: 0 };
    assert.deepEqual(decideRenewal(state, day(59)), {
      isDue: false,
      reason: "not_due",
      nextAttemptAt: day(60),
    });
    assert.deepEqual(decideRenewal(state, day(60)), { isDue: true });
    assert.deepEqual(decideRenewal(state, day(100)), { isDue: true });
  });

  test("without auto_renew it is never due", () => {
    const state = { isAutoRenew: false, validity: ninetyDays, failureCount: 0 };
    assert.deepEqual(decideRenewal(state, day(100)), { isDue: false, reason: "auto_renew_off" });
  });

  test("a certificate never obtained (failed first issuance) is due at once", () => {
    assert.deepEqual(decideRenewal({ isAutoRenew: true, failureCount: 0 }, day(0)), { isDue: true });
  });
});

describe("backoff after failures", () => {
  test("5 min, 10 min, 20 min … capped at 12 h", () => {
    assert.equal(backoffMs(0), 0);
    assert.equal(backoffMs(1), 5 * MINUTE_MS);
    assert.equal(backoffMs(2), 10 * MINUTE_MS);
    assert.equal(backoffMs(3), 20 * MINUTE_MS);
    assert.equal(backoffMs(9), 12 * 60 * MINUTE_MS);
    assert.equal(backoffMs(1_000), DEFAULT_BACKOFF.maxMs);
  });

  test("a due certificate that failed twice waits 10 min after the last attempt", () => {
    const lastAttemptAt = day(61);
    const state = { isAutoRenew: true, validity: ninetyDays, failureCount: 2, lastAttemptAt };
    const retryAt = new Date(lastAttemptAt.getTime() + 10 * MINUTE_MS);
    assert.deepEqual(decideRenewal(state, new Date(retryAt.getTime() - 1)), {
      isDue: false,
      reason: "backoff",
      nextAttemptAt: retryAt,
    });
    assert.deepEqual(decideRenewal(state, retryAt), { isDue: true });
  });

  test("a failure long ago does not hold back a renewal once due", () => {
    const state = { isAutoRenew: true, validity: ninetyDays, failureCount: 1, lastAttemptAt: day(1) };
    assert.deepEqual(decideRenewal(state, day(60)), { isDue: true });
  });

  test("a failed first issuance is retried with the same backoff", () => {
    const state = { isAutoRenew: true, failureCount: 1, lastAttemptAt: day(0) };
    assert.equal(decideRenewal(state, new Date(day(0).getTime() + MINUTE_MS)).isDue, false);
    assert.equal(decideRenewal(state, new Date(day(0).getTime() + 5 * MINUTE_MS)).isDue, true);
  });
});

describe("status", () => {
  test("pending or failed while no certificate exists", () => {
    assert.equal(deriveStatus("pending", undefined, day(0)), "pending");
    assert.equal(deriveStatus("failed", undefined, day(0)), "failed");
  });

  test("valid, then expiring once renewal is due, then expired", () => {
    assert.equal(deriveStatus("issued", ninetyDays, day(10)), "valid");
    assert.equal(deriveStatus("issued", ninetyDays, day(60)), "expiring");
    assert.equal(deriveStatus("issued", ninetyDays, day(90)), "expired");
  });

  test("a failed renewal keeps reporting the certificate still in service", () => {
    assert.equal(deriveStatus("failed", ninetyDays, day(30)), "valid");
  });
});
