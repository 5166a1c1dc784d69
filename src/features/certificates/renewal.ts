// The renewal rules as pure functions: when a certificate is due (two thirds of its lifetime gone), how
// long to back off after failed attempts, and which status the API reports. The job only does the I/O.

export const CERTIFICATE_STATUSES = ["pending", "valid", "expiring", "expired", "failed"] as const;
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];

/** Whether a certificate was ever obtained: a publicca record starts `pending` and may end `failed`. */
export type IssuanceState = "pending" | "failed" | "issued";

export type Validity = { notBefore: Date; notAfter: Date };

export type BackoffPolicy = { baseMs: number; maxMs: number };
/** 5 min, 10 min, 20 min … capped at 12 h: a CA outage is retried often, a bad config not hammered. */
export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 5 * 60_000, maxMs: 12 * 3_600_000 };

export const RENEW_AFTER_LIFETIME_FRACTION = 2 / 3;

/** The moment two thirds of the certificate's lifetime have passed. */
export function renewalDueAt(validity: Validity): Date {
  const start = validity.notBefore.getTime();
  const lifetimeMs = Math.max(0, validity.notAfter.getTime() - start);
  return new Date(start + Math.floor(lifetimeMs * RENEW_AFTER_LIFETIME_FRACTION));
}

/**
 * What the API reports. With a certificate in hand the dates decide (a failed renewal of a still-valid
 * certificate keeps it `valid`/`expiring`, with the reason in `last_error`); `expiring` means renewal is due.
 */
export function deriveStatus(
  issuance: IssuanceState,
  validity: Validity | undefined,
  now: Date,
): CertificateStatus {
  if (validity === undefined) return issuance === "failed" ? "failed" : "pending";
  if (now.getTime() >= validity.notAfter.getTime()) return "expired";
  if (now.getTime() >= renewalDueAt(validity).getTime()) return "expiring";
  return "valid";
}

/** Delay before the next attempt after `failureCount` consecutive failures (0 failures: no delay). */
export function backoffMs(failureCount: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  if (failureCount <= 0) return 0;
  const exponent = Math.min(failureCount - 1, 30);
  return Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
}

export type RenewalState = {
  isAutoRenew: boolean;
  /** Absent while no certificate was ever obtained (a publicca record whose issuance failed). */
  validity?: Validity;
  failureCount: number;
  lastAttemptAt?: Date;
};

export type RenewalDecision =
  | { isDue: true }
  | { isDue: false; reason: "auto_renew_off" }
  | { isDue: false; reason: "not_due" | "backoff"; nextAttemptAt: Date };

/** Whether the renewal job should renew now, and if not, when to look again. */
export function decideRenewal(
  state: RenewalState,
  now: Date,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): RenewalDecision {
  if (!state.isAutoRenew) return { isDue: false, reason: "auto_renew_off" };
  const dueAtMs = state.validity === undefined ? now.getTime() : renewalDueAt(state.validity).getTime();
  const retryAtMs =
    state.failureCount > 0 && state.lastAttemptAt !== undefined
      ? state.lastAttemptAt.getTime() + backoffMs(state.failureCount, policy)
      : Number.NEGATIVE_INFINITY;
  const nextAttemptAtMs = Math.max(dueAtMs, retryAtMs);
  if (now.getTime() >= nextAttemptAtMs) return { isDue: true };
  return {
    isDue: false,
    reason: retryAtMs > dueAtMs ? "backoff" : "not_due",
    nextAttemptAt: new Date(nextAttemptAtMs),
  };
}
