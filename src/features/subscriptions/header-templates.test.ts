// The compiled templated headers give exactly what filling each template and making it header-safe
// gives (the rule before they were compiled), for every variable, unknown ones, repeated ones, text
// outside ASCII in the template and in the user's name, and users limited, expiring and unlimited.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { headerSafe } from "../../lib/text.ts";
import { fillTemplate } from "../../lib/user-values.ts";
import { prepareRecord, type RecordInput, writeRecord } from "./engine/user-record.ts";
import { HeaderTemplates } from "./header-templates.ts";
import { userValuesAt } from "./user-values.ts";

const NOW_MS = Date.UTC(2026, 11, 2, 10, 0, 0);
const TEMPLATES = [
  "{USERNAME}",
  "{DATA_LEFT} left · {DAYS_LEFT} days · until {EXPIRE_DATE} ({STATUS})",
  "plain text without variables",
  "{SUBSCRIPTION_URL}?again={SUBSCRIPTION_URL}",
  "{UNKNOWN} stays, {USERNAME}{USERNAME} twice, {lower} too",
  "Осталось {DATA_LEFT} — {DAYS_LEFT} дн.",
  "{",
  "}{STATUS}{",
];

function recordOf(input: Partial<RecordInput>): { page: Buffer; at: number } {
  const prepared = prepareRecord({
    userId: "6f0e9c1a-3b2d-4c5e-8f7a-1b2c3d4e5f60",
    userName: "user",
    disposition: undefined,
    layoutSlot: 1,
    credentials: ["0f1e2d3c-4b5a-4697-8877-66554433aa11"],
    uploadBytes: 0,
    downloadBytes: 0,
    loadedAtS: NOW_MS / 1000,
    ...input,
  });
  if (prepared === undefined) throw new Error("record not prepared");
  const page = Buffer.alloc(prepared.length + 16);
  writeRecord(page, 8, prepared);
  return { page, at: 8 };
}

const USERS: Partial<RecordInput>[] = [
  { userName: "alice", status: "active" },
  {
    userName: "Пользователь {STATUS} 7",
    status: "limited",
    totalBytes: 1000,
    uploadBytes: 600,
    downloadBytes: 900,
  },
  {
    userName: "bob\u2028🙂",
    status: "active",
    totalBytes: 10 * 2 ** 30,
    uploadBytes: 123_456_789,
    expireS: NOW_MS / 1000 + 2.5 * 86_400,
  },
  { userName: "carol", status: "expired", expireS: NOW_MS / 1000 - 86_400 },
];

describe("templated headers", () => {
  test("each compiled header equals the template filled and made header-safe, for every kind of user", () => {
    const headers = TEMPLATES.map((value, i) => ({ name: `x-h${i}`, value }));
    const compiled = new HeaderTemplates(headers);
    const url = "https://sub.example.com/sub/0123456789abcdef0123456789abcdef";
    for (const user of USERS) {
      const { page, at } = recordOf(user);
      const out: string[] = [];
      compiled.pushInto(out, page, at, NOW_MS, url);
      const values = { ...userValuesAt(page, at, NOW_MS), SUBSCRIPTION_URL: url };
      const expected = headers.flatMap(({ name, value }) => [name, headerSafe(fillTemplate(value, values))]);
      assert.deepEqual(out, expected, user.userName);
      for (const value of out) assert.match(value, /^[\x20-\x7e]*$/);
    }
  });

  test("a header uses only the variables it names: none when it names none", () => {
    const compiled = new HeaderTemplates([{ name: "x-static", value: "{NOPE} ∞" }]);
    const out: string[] = [];
    const { page, at } = recordOf({ userName: "dave" });
    compiled.pushInto(out, page, at, NOW_MS, "/sub/x");
    assert.deepEqual(out, ["x-static", `{NOPE} ${encodeURIComponent("∞")}`]);
    assert.equal(new HeaderTemplates([]).length, 0);
  });
});
