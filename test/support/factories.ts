// Small factories that arrange data through the public API, as an operator would.
import assert from "node:assert/strict";
import type { TestApp } from "./app.ts";

export type UserBody = {
  id: string;
  name: string;
  comment: string | null;
  telegram_id: number | null;
  created_at: string;
  updated_at: string;
};

export async function createUser(t: TestApp, body: Record<string, unknown> = {}): Promise<UserBody> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/users",
    headers: t.auth,
    payload: { name: `user-${Math.random().toString(36).slice(2, 8)}`, ...body },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as UserBody;
}
