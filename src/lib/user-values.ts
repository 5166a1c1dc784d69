// The per-user variables of host remarks and templated headers (issue 48) as plain text, from plain
// numbers: the subscription engine reads them from a user's record (features/subscriptions/
// user-values.ts), the admin API from the user's row; both write the same text.

export type UserValues = {
  USERNAME: string;
  DATA_LEFT: string;
  DAYS_LEFT: string;
  EXPIRE_DATE: string;
  STATUS: string;
};

/** What "no limit" / "never" reads as. */
export const UNLIMITED = "∞";
const DAY_S = 86_400;
const UNITS = ["B", "KB", "MB", "GB", "TB", "PB"];

/** Bytes as people read them: 1024-based, one decimal from GB up ("12.5 GB", "300 MB"). */
export function readableBytes(bytes: number): string {
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit >= 3 && value < 100 ? 1 : 0;
  return `${value.toFixed(digits).replace(/\.0$/, "")} ${UNITS[unit]}`;
}

/** `totalBytes` 0: no limit; `expireS` 0: never (seconds since the epoch). */
export function userValues(
  user: { name: string; usedBytes: number; totalBytes: number; expireS: number; status: string },
  nowMs: number,
): UserValues {
  return {
    USERNAME: user.name,
    DATA_LEFT: dataLeft(user.totalBytes, user.usedBytes),
    DAYS_LEFT: daysLeft(user.expireS, nowMs),
    EXPIRE_DATE: expireDate(user.expireS),
    STATUS: user.status,
  };
}

/** {DATA_LEFT}: `totalBytes` 0 is no limit. */
export function dataLeft(totalBytes: number, usedBytes: number): string {
  return totalBytes === 0 ? UNLIMITED : readableBytes(totalBytes - usedBytes);
}

/** {DAYS_LEFT}: whole days to `expireS` rounded up (0 once past); `expireS` 0 is never. */
export function daysLeft(expireS: number, nowMs: number): string {
  return expireS === 0 ? UNLIMITED : String(Math.max(0, Math.ceil((expireS - nowMs / 1000) / DAY_S)));
}

/** {EXPIRE_DATE}: the UTC day, YYYY-MM-DD; `expireS` 0 is never. */
export function expireDate(expireS: number): string {
  return expireS === 0 ? UNLIMITED : new Date(expireS * 1000).toISOString().slice(0, 10);
}

const VARIABLE = /\{([A-Z_]+)\}/g;

/** The template with each known {VARIABLE} replaced; unknown ones stay as written. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(VARIABLE, (whole, name: string) => values[name] ?? whole);
}
