// The lifecycle decision as a pure function: a user's numbers and a clock in, the user's numbers after
// one tick of the lifecycle job out (status, period reset, on-hold start, notifications). No I/O: the
// job (lifecycle.repository.ts) does the same in set-based SQL, statement by statement in the order
// below, and lifecycle-sql.test.ts runs both on the same random users and compares them.
//
// One tick, in order:
//  1. on-hold timeout: on_hold and on_hold_timeout_at <= now → active, expire_at = now + duration;
//  2. period reset: data_limit_reset ≠ no_reset and next_reset_at <= now → used_bytes 0,
//     last_reset_at now, thresholds re-armed, limited → active, next_reset_at the next boundary
//     (the SQL tick resets at most a time budget's worth and leaves the rest due for the next ticks);
//  3. expiry: active or limited and expire_at <= now → expired;
//  4. limit: active and used_bytes >= data_limit_bytes → limited;
//  5. re-admission: limited with room again → active; expired with a later (or no) expire_at →
//     active, or limited when the limit is reached;
//  6. usage threshold: active or limited with a limit, the highest threshold reached above the one
//     notified this period → user.usage_threshold once; next_notice_percent is then the next
//     threshold to look for (a partial index holds only users at or past theirs; 0 = judge again);
//  7. expiring: active, expire_at within the notice window and not notified yet → user.expiring once.
// A missing next_reset_at (a period set by a write) is computed from the tick's time, before step 2.

import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { nextResetAt } from "../../lib/periods.ts";

export type LifecycleUser = {
  status: UserStatus;
  data_limit_bytes: number | null;
  data_limit_reset: DataLimitReset;
  used_bytes: number;
  created_at: string;
  last_reset_at: string | null;
  next_reset_at: string | null;
  expire_at: string | null;
  on_hold_duration_seconds: number | null;
  on_hold_timeout_at: string | null;
  notified_usage_percent: number;
  next_notice_percent: number | null;
  expiring_notified_at: string | null;
};

export type LifecycleOptions = {
  /** Usage thresholds in percent (1-100), e.g. [80, 95]. */
  thresholds: readonly number[];
  /** user.expiring this many seconds before expire_at; 0: never. */
  expiringNoticeSeconds: number;
};

export type LifecycleEvent =
  | { type: "user.activated"; from: UserStatus }
  | { type: "user.limited" }
  | { type: "user.expired" }
  | { type: "user.usage_threshold"; percent: number }
  | { type: "user.expiring" };

export type LifecycleDecision = {
  user: LifecycleUser;
  /** The period started over in this tick. */
  isReset: boolean;
  events: LifecycleEvent[];
};

export function decide(before: LifecycleUser, now: Date, options: LifecycleOptions): LifecycleDecision {
  const user: LifecycleUser = { ...before };
  const nowIso = now.toISOString();
  const nowMs = now.getTime();
  const events: LifecycleEvent[] = [];
  const at = (value: string | null) => (value === null ? null : Date.parse(value));
  // 0. a period without its next boundary gets one, counted from now
  if (user.data_limit_reset !== "no_reset" && user.next_reset_at === null) {
    user.next_reset_at = nextResetAt(user.data_limit_reset, user.created_at, now)?.toISOString() ?? null;
  }
  // 1. on-hold timeout
  const timeout = at(user.on_hold_timeout_at);
  if (user.status === "on_hold" && timeout !== null && timeout <= nowMs) {
    user.status = "active";
    user.expire_at = addSeconds(now, user.on_hold_duration_seconds ?? 0);
    events.push({ type: "user.activated", from: "on_hold" });
  }
  // 2. period reset
  let isReset = false;
  const next = at(user.next_reset_at);
  if (user.data_limit_reset !== "no_reset" && next !== null && next <= nowMs) {
    isReset = true;
    user.used_bytes = 0;
    user.last_reset_at = nowIso;
    user.notified_usage_percent = 0;
    user.next_notice_percent = thresholdAbove(0, options.thresholds);
    user.next_reset_at = nextResetAt(user.data_limit_reset, user.created_at, now)?.toISOString() ?? null;
    if (user.status === "limited") {
      user.status = "active";
      events.push({ type: "user.activated", from: "limited" });
    }
  }
  const expire = at(user.expire_at);
  const isPast = expire !== null && expire <= nowMs;
  const isFull = user.data_limit_bytes !== null && user.used_bytes >= user.data_limit_bytes;
  // 3. expiry
  if ((user.status === "active" || user.status === "limited") && isPast) {
    user.status = "expired";
    events.push({ type: "user.expired" });
  }
  // 4. limit
  if (user.status === "active" && isFull) {
    user.status = "limited";
    events.push({ type: "user.limited" });
  }
  // 5. re-admission
  if (user.status === "limited" && !isFull) {
    user.status = "active";
    events.push({ type: "user.activated", from: "limited" });
  } else if (user.status === "expired" && !isPast && !events.some((e) => e.type === "user.expired")) {
    user.status = isFull ? "limited" : "active";
    events.push(isFull ? { type: "user.limited" } : { type: "user.activated", from: "expired" });
  }
  // 6. usage threshold: only users at or past their next notice are looked at (the SQL's partial index)
  const limit = user.data_limit_bytes ?? 0;
  const notice = user.next_notice_percent;
  if (limit > 0 && notice !== null && user.used_bytes * 100 >= limit * notice) {
    const reached = reachedThreshold(user.used_bytes, limit, options.thresholds);
    const isNotice =
      (user.status === "active" || user.status === "limited") && reached > user.notified_usage_percent;
    if (isNotice) {
      user.notified_usage_percent = reached;
      events.push({ type: "user.usage_threshold", percent: reached });
    }
    user.next_notice_percent = thresholdAbove(user.notified_usage_percent, options.thresholds);
  }
  // 7. expiring
  const expireAfter = at(user.expire_at);
  if (
    options.expiringNoticeSeconds > 0 &&
    user.status === "active" &&
    user.expiring_notified_at === null &&
    expireAfter !== null &&
    expireAfter > nowMs &&
    expireAfter <= nowMs + options.expiringNoticeSeconds * 1000
  ) {
    user.expiring_notified_at = nowIso;
    events.push({ type: "user.expiring" });
  }
  return { user, isReset, events };
}

/** The smallest threshold above `percent`; null when none is. */
export function thresholdAbove(percent: number, thresholds: readonly number[]): number | null {
  const above = thresholds.filter((p) => p > percent);
  return above.length === 0 ? null : Math.min(...above);
}

/** The highest threshold that used/limit reached (integer arithmetic, as the SQL does it); 0: none. */
export function reachedThreshold(used: number, limit: number, thresholds: readonly number[]): number {
  let best = 0;
  for (const percent of thresholds) if (used * 100 >= limit * percent && percent > best) best = percent;
  return best;
}

function addSeconds(now: Date, seconds: number): string {
  return new Date(now.getTime() + seconds * 1000).toISOString();
}
