// The per-user variables of host remarks and of the operator's templated headers (issue 48), read
// from a user's record: {USERNAME}, {DATA_LEFT}, {DAYS_LEFT}, {EXPIRE_DATE}, {STATUS}, and for
// headers {SUBSCRIPTION_URL}. Values are plain text: the remark goes through each format's own
// escaping, a header value is checked (no control characters) where it is made.
import {
  DOWNLOAD,
  EXPIRE,
  NAME,
  NAME_LENGTH,
  readU16,
  STATUS,
  STATUS_CODES,
  TOTAL,
  UPLOAD,
} from "./user-record.ts";

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

/** The values of the user whose record is at `at`, as of `nowMs`. */
export function userValuesAt(page: Buffer, at: number, nowMs: number): UserValues {
  const used = page.readDoubleLE(at + UPLOAD) + page.readDoubleLE(at + DOWNLOAD);
  const total = page.readDoubleLE(at + TOTAL);
  const expireS = page.readDoubleLE(at + EXPIRE);
  const nameLength = readU16(page, at + NAME_LENGTH);
  return {
    USERNAME: page.toString("utf8", at + NAME, at + NAME + nameLength),
    DATA_LEFT: total === 0 ? UNLIMITED : readableBytes(total - used),
    DAYS_LEFT: expireS === 0 ? UNLIMITED : String(Math.max(0, Math.ceil((expireS - nowMs / 1000) / DAY_S))),
    EXPIRE_DATE: expireS === 0 ? UNLIMITED : new Date(expireS * 1000).toISOString().slice(0, 10),
    STATUS: STATUS_CODES[page[at + STATUS] as number] ?? "",
  };
}

const VARIABLE = /\{([A-Z_]+)\}/g;

/** The template with each known {VARIABLE} replaced; unknown ones stay as written. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(VARIABLE, (whole, name: string) => values[name] ?? whole);
}
