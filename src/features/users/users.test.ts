// The users API as the seed defines it, on whichever dialect DATABASE_URL selects.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createUser, type UserBody } from "../../../test/support/factories.ts";
import { hasTrigrams } from "./users.repository.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

function api(method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) {
  return t.app.inject({
    method,
    url,
    headers: t.auth,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

describe("creating and reading users", () => {
  test("create returns 201 with the trimmed name, null defaults and ISO timestamps", async () => {
    const res = await api("POST", "/api/users", { name: "  Alice  " });
    assert.equal(res.statusCode, 201);
    const user = res.json();
    assert.equal(user.name, "Alice");
    assert.equal(user.comment, null);
    assert.equal(user.telegram_id, null);
    assert.match(user.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(user.created_at, user.updated_at);
    const got = await api("GET", `/api/users/${user.id}`);
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json(), user);
  });

  test("an unknown id is 404 and a malformed id is 400 naming the parameter", async () => {
    const missing = await api("GET", "/api/users/00000000-0000-4000-8000-000000000000");
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, "not_found");
    assert.equal(missing.headers["content-type"], "application/problem+json; charset=utf-8");
    for (const bad of ["not-a-uuid", "123", "00000000-0000-4000-8000-00000000000g"]) {
      const res = await api("GET", `/api/users/${bad}`);
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().code, "validation_failed");
      assert.equal(res.json().errors[0].path, "params.id");
    }
  });
});

describe("invalid input is refused with 400 naming the field", () => {
  const cases: [string, unknown, string][] = [
    ["missing name", {}, "body.name"],
    ["blank name", { name: "   " }, "body.name"],
    ["name too long", { name: "x".repeat(129) }, "body.name"],
    ["name wrong type", { name: 42 }, "body.name"],
    ["comment too long", { name: "a", comment: "c".repeat(1001) }, "body.comment"],
    ["telegram_id as string", { name: "a", telegram_id: "123" }, "body.telegram_id"],
    ["telegram_id negative", { name: "a", telegram_id: -5 }, "body.telegram_id"],
    ["telegram_id fractional", { name: "a", telegram_id: 1.5 }, "body.telegram_id"],
    ["unknown field", { name: "a", role: "admin" }, "body.role"],
  ];
  for (const [what, body, path] of cases) {
    test(what, async () => {
      const res = await api("POST", "/api/users", body);
      assert.equal(res.statusCode, 400);
      const problem = res.json();
      assert.equal(problem.status, 400);
      assert.equal(problem.code, "validation_failed");
      assert.ok(
        problem.errors.some((e: { path: string }) => e.path === path),
        `expected ${path} in ${JSON.stringify(problem.errors)}`,
      );
    });
  }

  test("malformed JSON is 400 malformed_json", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/users",
      headers: { ...t.auth, "content-type": "application/json" },
      payload: '{"name": "a",',
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, "malformed_json");
  });

  test("a body over 1 MiB is 413 and nothing is stored", async () => {
    const before = (await api("GET", "/api/users?per_page=1")).json().total;
    const res = await api("POST", "/api/users", { name: "big", comment: "x".repeat(1_100_000) });
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().code, "payload_too_large");
    assert.equal((await api("GET", "/api/users?per_page=1")).json().total, before);
  });
});

describe("updating users", () => {
  test("PUT changes only the fields present and null clears comment and telegram_id", async () => {
    const user = await createUser(t, { name: "Bob", comment: "vip", telegram_id: 4242 });
    const renamed = await api("PUT", `/api/users/${user.id}`, { name: "Robert" });
    assert.equal(renamed.statusCode, 200);
    assert.equal(renamed.json().name, "Robert");
    assert.equal(renamed.json().comment, "vip");
    assert.equal(renamed.json().telegram_id, 4242);
    const cleared = await api("PUT", `/api/users/${user.id}`, { comment: null, telegram_id: null });
    assert.equal(cleared.json().comment, null);
    assert.equal(cleared.json().telegram_id, null);
    assert.equal(cleared.json().name, "Robert");
    assert.ok(cleared.json().updated_at >= user.created_at);
  });

  test("name cannot be cleared, and an unknown id is 404", async () => {
    const user = await createUser(t);
    assert.equal((await api("PUT", `/api/users/${user.id}`, { name: null })).statusCode, 400);
    const res = await api("PUT", "/api/users/00000000-0000-4000-8000-000000000001", { name: "x" });
    assert.equal(res.statusCode, 404);
  });
});

describe("deleting users", () => {
  test("delete is 204, then the user is gone and the total drops; deleting again is 404", async () => {
    const total = async () => (await api("GET", "/api/users?per_page=1")).json().total as number;
    const before = await total();
    const user = await createUser(t);
    assert.equal(await total(), before + 1);
    const res = await api("DELETE", `/api/users/${user.id}`);
    assert.equal(await total(), before);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, "");
    assert.equal((await api("GET", `/api/users/${user.id}`)).statusCode, 404);
    assert.equal((await api("DELETE", `/api/users/${user.id}`)).statusCode, 404);
  });
});

describe("listing and searching users", () => {
  let made: UserBody[];
  before(async () => {
    made = [];
    for (let i = 0; i < 7; i++)
      made.push(await createUser(t, { name: `Pager ${i} Zebra-Ünïcode`, telegram_id: 900_000 + i }));
  });

  test("pages have the PRODUCT.md shape, defaults 1/50 and a 500 cap", async () => {
    const first = (await api("GET", "/api/users")).json();
    assert.equal(first.page, 1);
    assert.equal(first.per_page, 50);
    assert.ok(first.total >= 7);
    const page2 = (await api("GET", "/api/users?page=2&per_page=3")).json();
    const page1 = (await api("GET", "/api/users?page=1&per_page=3")).json();
    assert.equal(page2.items.length, 3);
    assert.equal(page2.total, page1.total);
    const ids = new Set([...page1.items, ...page2.items].map((u: UserBody) => u.id));
    assert.equal(ids.size, 6, "pages do not overlap");
    assert.equal((await api("GET", "/api/users?per_page=501")).statusCode, 400);
    assert.equal((await api("GET", "/api/users?page=0")).statusCode, 400);
    assert.equal((await api("GET", "/api/users?page=abc")).statusCode, 400);
  });

  test("a cursor walk visits every user once, in the order of the pages, and ends with a null cursor", async () => {
    const perPage = 3;
    const byPage: string[] = [];
    const first = (await api("GET", `/api/users?per_page=${perPage}`)).json();
    for (let page = 1; page <= Math.ceil(first.total / perPage); page++) {
      const res = (await api("GET", `/api/users?page=${page}&per_page=${perPage}`)).json();
      byPage.push(...res.items.map((u: UserBody) => u.id));
    }
    const byCursor: string[] = first.items.map((u: UserBody) => u.id);
    let cursor: string | null = first.next_cursor;
    for (let page = 2; cursor !== null; page++) {
      const res = await api("GET", `/api/users?per_page=${perPage}&cursor=${cursor}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual([body.page, body.per_page, body.total], [page, perPage, first.total]);
      byCursor.push(...body.items.map((u: UserBody) => u.id));
      cursor = body.next_cursor;
      assert.ok(page <= first.total, "the walk ends");
    }
    assert.equal(byCursor.length, first.total);
    assert.deepEqual(byCursor, byPage);
    const last = (
      await api("GET", `/api/users?page=${Math.ceil(first.total / perPage)}&per_page=${perPage}`)
    ).json();
    assert.equal(last.next_cursor, null);
  });

  test("a cursor this API did not give out, or one with page, is 400 naming the cursor", async () => {
    const { next_cursor: cursor } = (await api("GET", "/api/users?per_page=1")).json();
    assert.equal(typeof cursor, "string");
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const user = made[0] as UserBody;
    for (const bad of [
      "x",
      "not base64!",
      forged({ a: user.created_at, i: user.id }),
      forged({ a: "yesterday", i: user.id, p: 2 }),
      forged({ a: user.created_at, i: "' OR 1=1", p: 2 }),
      forged({ a: user.created_at, i: user.id, p: 0 }),
      forged([1, 2]),
      "A".repeat(300),
    ]) {
      const res = await api("GET", `/api/users?cursor=${encodeURIComponent(bad)}`);
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().code, "validation_failed");
      assert.equal(res.json().errors[0].path, "querystring.cursor", bad);
    }
    const both = await api("GET", `/api/users?page=2&cursor=${cursor}`);
    assert.equal(both.statusCode, 400);
    assert.equal(both.json().errors[0].path, "querystring.cursor");
  });

  test("search matches a name substring case-insensitively, including short queries", async () => {
    const long = (await api("GET", "/api/users/search?q=zEBRA-ü")).json() as UserBody[];
    assert.equal(long.filter((u) => made.some((m) => m.id === u.id)).length, 7);
    const exact = (
      await api("GET", `/api/users/search?q=${encodeURIComponent("pager 3")}`)
    ).json() as UserBody[];
    assert.deepEqual(
      exact.map((u) => u.id),
      [made[3]?.id],
    );
    const short = (await api("GET", "/api/users/search?q=3%20")).json() as UserBody[];
    assert.ok(short.some((u) => u.id === made[3]?.id));
    const none = (await api("GET", "/api/users/search?q=nobody-has-this-name")).json();
    assert.deepEqual(none, []);
  });

  test("search matches telegram_id and uuid exactly", async () => {
    const byTelegram = (await api("GET", "/api/users/search?q=900005")).json() as UserBody[];
    assert.deepEqual(
      byTelegram.map((u) => u.id),
      [made[5]?.id],
    );
    const byId = (await api("GET", `/api/users/search?q=${made[2]?.id}`)).json() as UserBody[];
    assert.deepEqual(
      byId.map((u) => u.id),
      [made[2]?.id],
    );
  });

  test("LIKE wildcards in q are literal", async () => {
    const pct = await createUser(t, { name: "discount 50%_off" });
    const res = (await api("GET", "/api/users/search?q=50%25_")).json() as UserBody[];
    assert.deepEqual(
      res.map((u) => u.id),
      [pct.id],
    );
    const wild = (await api("GET", "/api/users/search?q=%25")).json() as UserBody[];
    assert.deepEqual(
      wild.map((u) => u.id),
      [pct.id],
    );
  });

  test("search returns at most 100 users and requires q", async () => {
    for (let i = 0; i < 105; i++) await createUser(t, { name: `bulk-searchable-${i}` });
    const res = (await api("GET", "/api/users/search?q=bulk-searchable")).json() as UserBody[];
    assert.equal(res.length, 100);
    assert.equal((await api("GET", "/api/users/search")).statusCode, 400);
    assert.equal((await api("GET", `/api/users/search?q=${"x".repeat(129)}`)).statusCode, 400);
  });
});

test("name fragments go through the trigram index on PostgreSQL only when pg_trgm can take trigrams from them", () => {
  // pg_trgm pads a word with two spaces where something other than a letter or digit starts it
  // inside the fragment and one where it ends it; trigrams need 3 characters.
  for (const q of ["tav", "rehi ", "o de", "a b", "a-b", "ab ", " ab", "zürich", "50%_"]) {
    assert.equal(hasTrigrams(q), true, q);
  }
  for (const q of ["ka", "a", "---", "  ", "%_", "ab"]) assert.equal(hasTrigrams(q), false, q);
});
