// The opaque cursor of GET /api/users: where the next page starts (after the last user of this one,
// in created_at, id order) and that page's number. base64url of a small JSON; a cursor this API did not
// give out is a 400 naming the parameter, never a 500.
import { ValidationError } from "../../lib/errors.ts";
import type { UserPosition } from "./users.repository.ts";
import type { User } from "./users.schemas.ts";

export type Cursor = UserPosition & { page: number };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/;
const MAX_PAGE = Number.MAX_SAFE_INTEGER;

export function encodeCursor(last: User, page: number): string {
  return Buffer.from(JSON.stringify({ a: last.created_at, i: last.id, p: page }), "utf8").toString(
    "base64url",
  );
}

export function decodeCursor(text: string): Cursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const { a, i, p } = (value ?? {}) as { a?: unknown; i?: unknown; p?: unknown };
  const isValid =
    typeof a === "string" &&
    TIMESTAMP.test(a) &&
    !Number.isNaN(Date.parse(a)) &&
    typeof i === "string" &&
    UUID.test(i) &&
    Number.isInteger(p) &&
    (p as number) >= 2 &&
    (p as number) <= MAX_PAGE;
  if (!isValid) {
    throw new ValidationError("cursor is not one this API gave out", [
      { path: "querystring.cursor", message: "is not a next_cursor of GET /api/users" },
    ]);
  }
  return { createdAt: a, id: i, page: p as number };
}

/**
 * The cursor of a filtered or sorted list: the last user's sort value (null: never expires) and id,
 * the next page's number, the total counted on the first page, and `k`, a digest of the filters and
 * the sort the cursor was given out for: replayed with other ones it is a 400.
 */
export type ListCursor = {
  value: string | number | null;
  id: string;
  page: number;
  total: number;
  key: string;
};

export function encodeListCursor(cursor: ListCursor): string {
  const { value, id, page, total, key } = cursor;
  return Buffer.from(JSON.stringify({ v: value, i: id, p: page, t: total, k: key }), "utf8").toString(
    "base64url",
  );
}

export function decodeListCursor(
  text: string,
  key: string,
  sortKey: "created_at" | "used_bytes" | "expire_at",
): ListCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const { v, i, p, t, k } = (value ?? {}) as Record<string, unknown>;
  if (typeof k === "string" && k !== key) {
    throw new ValidationError("cursor was given out for other filters or another sort", [
      {
        path: "querystring.cursor",
        message:
          "pass the same status, expires_before, used_over_percent, sort and order as the page it came from",
      },
    ]);
  }
  const isValue =
    sortKey === "used_bytes"
      ? Number.isSafeInteger(v) && (v as number) >= 0
      : (sortKey === "expire_at" && v === null) ||
        (typeof v === "string" && TIMESTAMP.test(v) && !Number.isNaN(Date.parse(v)));
  const isValid =
    k === key &&
    isValue &&
    typeof i === "string" &&
    UUID.test(i) &&
    Number.isInteger(p) &&
    (p as number) >= 2 &&
    (p as number) <= MAX_PAGE &&
    Number.isSafeInteger(t) &&
    (t as number) >= 0;
  if (!isValid) {
    throw new ValidationError("cursor is not one this API gave out", [
      { path: "querystring.cursor", message: "is not a next_cursor of GET /api/users with these parameters" },
    ]);
  }
  return { value: v as string | number | null, id: i as string, page: p as number, total: t as number, key };
}
