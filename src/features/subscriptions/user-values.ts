// The per-user variables of host remarks and of the operator's templated headers (issue 48), read
// from a user's record: {USERNAME}, {DATA_LEFT}, {DAYS_LEFT}, {EXPIRE_DATE}, {STATUS}, and for
// headers {SUBSCRIPTION_URL}. Values are plain text: the remark goes through each format's own
// escaping, a header value is checked (no control characters) where it is made.

import { type UserValues, userValues } from "../../lib/user-values.ts";
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
} from "./engine/user-record.ts";

/** The values of the user whose record is at `at`, as of `nowMs`. */
export function userValuesAt(page: Buffer, at: number, nowMs: number): UserValues {
  const nameLength = readU16(page, at + NAME_LENGTH);
  return userValues(
    {
      name: page.toString("utf8", at + NAME, at + NAME + nameLength),
      usedBytes: page.readDoubleLE(at + UPLOAD) + page.readDoubleLE(at + DOWNLOAD),
      totalBytes: page.readDoubleLE(at + TOTAL),
      expireS: page.readDoubleLE(at + EXPIRE),
      status: STATUS_CODES[page[at + STATUS] as number] ?? "",
    },
    nowMs,
  );
}
