// Data-limit periods in UTC: when a user's used_bytes next starts over. Pure; the lifecycle job
// (features/users) moves the counters at these moments and the subscription's placeholder names them.
import type { DataLimitReset } from "../domain/users.ts";

/**
 * When a period that is running at `after` ends (the first boundary strictly after it), UTC:
 * day → next midnight; week → next Monday 00:00; month → the 1st; year → 1 January;
 * month_rolling → the user's own day: `anchor` (created_at) plus whole months, its day clamped to the
 * month's last day and its time of day kept (created 31 Jan 10:00 → 28 Feb 10:00, 31 Mar 10:00).
 */
export function nextResetAt(period: DataLimitReset, anchor: string, after: Date): Date | null {
  const y = after.getUTCFullYear();
  const m = after.getUTCMonth();
  const d = after.getUTCDate();
  switch (period) {
    case "no_reset":
      return null;
    case "day":
      return new Date(Date.UTC(y, m, d + 1));
    case "week": {
      const sinceMonday = (after.getUTCDay() + 6) % 7;
      return new Date(Date.UTC(y, m, d - sinceMonday + 7));
    }
    case "month":
      return new Date(Date.UTC(y, m + 1, 1));
    case "year":
      return new Date(Date.UTC(y + 1, 0, 1));
    case "month_rolling": {
      const start = new Date(anchor);
      const months = (y - start.getUTCFullYear()) * 12 + (m - start.getUTCMonth());
      for (let k = Math.max(1, months - 1); ; k++) {
        const candidate = monthsAfter(start, k);
        if (candidate.getTime() > after.getTime()) return candidate;
      }
    }
  }
}

/** `start` plus `k` months, the day clamped to the target month's length. */
export function monthsAfter(start: Date, k: number): Date {
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth() + k;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(start.getUTCDate(), lastDay),
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  );
}
