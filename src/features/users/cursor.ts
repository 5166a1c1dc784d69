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
