// Usage history, the pure part: which bucket a collection's bytes fall into, which ranges a chart may
// ask for, the zero-filled series a chart draws, and what pruning keeps. Buckets are UTC hours and UTC
// days; a collection's deltas go to the bucket of the moment they are written (the bytes were carried
// during the traffic interval before it, so a bucket lags by at most that interval).
import { ValidationError } from "../../lib/errors.ts";

export const GRANULARITIES = ["hour", "day"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const STEP_MS: Record<Granularity, number> = { hour: HOUR_MS, day: DAY_MS };
/** The widest range one request may ask for: hourly buckets are kept 7 days, daily ones 13 months. */
export const MAX_SPAN_MS: Record<Granularity, number> = { hour: 7 * DAY_MS, day: 400 * DAY_MS };
/** Timestamps outside these years would not compare as text on SQLite (toISOString widens them). */
const EARLIEST_MS = Date.UTC(1970, 0, 1);
const LATEST_MS = Date.UTC(9999, 11, 31);

export type UsageRange = { from: Date; to: Date; granularity: Granularity };
export type UsageBucket = { start: string; uplink_bytes: number; downlink_bytes: number };

/** The start of the bucket `at` falls into. */
export function bucketStart(at: Date, granularity: Granularity): Date {
  const step = STEP_MS[granularity];
  return new Date(Math.floor(at.getTime() / step) * step);
}

/**
 * A query's range, checked: both ends valid timestamps, from before to, not wider than the
 * granularity allows. `from` is rounded down to its bucket; `to` is exclusive.
 */
export function parseRange(query: { from: string; to: string; granularity: Granularity }): UsageRange {
  const from = new Date(query.from);
  const to = new Date(query.to);
  for (const [name, at] of [
    ["from", from],
    ["to", to],
  ] as const) {
    const ms = at.getTime();
    if (Number.isNaN(ms) || ms < EARLIEST_MS || ms > LATEST_MS) {
      throw invalid(name, "must be a timestamp between 1970 and 9999");
    }
  }
  if (from.getTime() >= to.getTime()) throw invalid("to", "must be after from");
  const span = to.getTime() - from.getTime();
  if (span > MAX_SPAN_MS[query.granularity]) {
    const days = MAX_SPAN_MS[query.granularity] / DAY_MS;
    throw invalid("to", `must be at most ${days} days after from for granularity ${query.granularity}`);
  }
  return { from: bucketStart(from, query.granularity), to, granularity: query.granularity };
}

/** Optional query fields: none of them (the totals) or all three (a series); anything else is a 400. */
export function seriesQuery(query: {
  from?: string | undefined;
  to?: string | undefined;
  granularity?: Granularity | undefined;
}): { from: string; to: string; granularity: Granularity } | undefined {
  const { from, to, granularity } = query;
  if (from === undefined && to === undefined && granularity === undefined) return undefined;
  if (from !== undefined && to !== undefined && granularity !== undefined) return { from, to, granularity };
  const missing = (["from", "to", "granularity"] as const).filter((name) => query[name] === undefined);
  throw new ValidationError(
    `from, to and granularity go together (missing: ${missing.join(", ")})`,
    missing.map((name) => ({ path: `querystring.${name}`, message: "is required with the other two" })),
  );
}

/** Every bucket of the range in order, zero where nothing was stored: what a chart draws. */
export function denseSeries(
  range: UsageRange,
  stored: readonly { start: string; uplinkBytes: number; downlinkBytes: number }[],
): UsageBucket[] {
  const byStart = new Map(stored.map((row) => [new Date(row.start).getTime(), row]));
  const buckets: UsageBucket[] = [];
  const step = STEP_MS[range.granularity];
  for (let ms = range.from.getTime(); ms < range.to.getTime(); ms += step) {
    const row = byStart.get(ms);
    buckets.push({
      start: new Date(ms).toISOString(),
      uplink_bytes: row?.uplinkBytes ?? 0,
      downlink_bytes: row?.downlinkBytes ?? 0,
    });
  }
  return buckets;
}

/** Buckets that start before these go: hourly ones after 7 days, daily ones after 13 months. */
export function pruneCutoffs(now: Date): { hourly: Date; daily: Date } {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth() - 13;
  // The same day of the month 13 months back, or that month's last day (31 March → 28/29 February).
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const daily = new Date(Date.UTC(year, month, Math.min(now.getUTCDate(), lastDay)));
  return { hourly: bucketStart(new Date(now.getTime() - 7 * DAY_MS), "hour"), daily };
}

export function sumBuckets(buckets: readonly UsageBucket[]): {
  uplink_bytes: number;
  downlink_bytes: number;
} {
  let uplink = 0;
  let downlink = 0;
  for (const bucket of buckets) {
    uplink += bucket.uplink_bytes;
    downlink += bucket.downlink_bytes;
  }
  return { uplink_bytes: uplink, downlink_bytes: downlink };
}

function invalid(name: string, message: string): ValidationError {
  return new ValidationError(`${name} ${message}`, [{ path: `querystring.${name}`, message }]);
}
