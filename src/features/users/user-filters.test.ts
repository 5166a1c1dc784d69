// GET /api/users filters and sorts (issue 12 item 6): status (one or several), expires_before,
// used_over_percent, sort by created_at / used_bytes / expire_at both ways; every order checked
// against the same users sorted here, walked page by page by cursor and by page number; cursors bound
// to their filters; the seed's list unchanged. Both dialects (DATABASE_URL).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { UserFiltersRepository } from "./user-filters.repository.ts";
import { UserListService } from "./user-list.service.ts";
import { NO_PUBLIC_URL } from "./users.service.ts";

let t: TestApp;
type U = {
  id: string;
  name: string;
  status: string;
  used_bytes: number;
  data_limit_bytes: number | null;
  expire_at: string | null;
  created_at: string;
};
let everyone: U[] = [];

const DAY = 86_400_000;
const inDays = (n: number) => new Date(Date.now() + n * DAY).toISOString();

function get(url: string) {
  return t.app.inject({ method: "GET", url, headers: t.auth });
}

async function create(body: Record<string, unknown>, usedBytes = 0): Promise<void> {
  const res = await t.app.inject({ method: "POST", url: "/api/users", headers: t.auth, payload: body });
  assert.equal(res.statusCode, 201, res.body);
  if (usedBytes > 0) {
    // Traffic is the lifecycle's to count; here it is written as the collector would leave it.
    await t.deps.database.db
      .updateTable("users")
      .set({ used_bytes: usedBytes })
      .where("id", "=", res.json().id)
      .execute();
    // An admin's write judges the status from the numbers (a write of the limit as it is).
    const again = await t.app.inject({
      method: "PUT",
      url: `/api/users/${res.json().id}`,
      headers: t.auth,
      payload: { data_limit_bytes: body.data_limit_bytes ?? null },
    });
    assert.equal(again.statusCode, 200, again.body);
  }
}

before(async () => {
  t = await createTestApp();
  // 24 users: limits with usage below, at and over 80 % and 100 %, unlimited with usage, a zero
  // limit, expiries in the past, soon, later and never, a disabled one; equal usages and equal
  // expiries so ties are broken by id.
  const soon = inDays(3);
  for (let i = 0; i < 4; i++) {
    await create({ name: `unlimited-${i}` }, i * 500);
    await create(
      { name: `half-${i}`, data_limit_bytes: 1000, expire_at: i % 2 ? soon : inDays(30 + i) },
      500,
    );
    await create({ name: `eighty-${i}`, data_limit_bytes: 1000, expire_at: i < 2 ? soon : null }, 800);
    await create({ name: `over-${i}`, data_limit_bytes: 1000 }, 1000 + i);
    await create({ name: `past-${i}`, expire_at: inDays(-1 - i) }, 10 * i);
    await create({ name: `off-${i}`, status: "disabled", data_limit_bytes: 0, expire_at: inDays(10) });
  }
  everyone = (await get("/api/users?per_page=500")).json().items;
  assert.equal(everyone.length, 24);
});
after(async () => {
  await t.close();
});

/** Every user of a listing, by following next_cursor from its first page. */
async function walkCursor(query: string, perPage: number): Promise<{ ids: string[]; totals: number[] }> {
  const ids: string[] = [];
  const totals: number[] = [];
  let url = `/api/users?${query}&per_page=${perPage}`;
  for (let guard = 0; guard < 100; guard++) {
    const res = await get(url);
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    const body = res.json();
    ids.push(...body.items.map((u: U) => u.id));
    totals.push(body.total);
    if (body.next_cursor === null) return { ids, totals };
    url = `/api/users?${query}&per_page=${perPage}&cursor=${body.next_cursor}`;
  }
  throw new Error("no last page");
}

async function walkPages(query: string, perPage: number): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; page < 100; page++) {
    const body = (await get(`/api/users?${query}&per_page=${perPage}&page=${page}`)).json();
    ids.push(...body.items.map((u: U) => u.id));
    if (body.next_cursor === null) return ids;
  }
  throw new Error("no last page");
}

/** The expected order: the sort key (null expiry = never = after every date ascending), then id. */
function sorted(users: U[], key: "created_at" | "used_bytes" | "expire_at", order: "asc" | "desc"): string[] {
  const dir = order === "asc" ? 1 : -1;
  return [...users]
    .sort((a, b) => {
      const va = a[key];
      const vb = b[key];
      if (va !== vb) {
        if (va === null) return dir;
        if (vb === null) return -dir;
        return (va < vb ? -1 : 1) * dir;
      }
      return (a.id < b.id ? -1 : 1) * dir;
    })
    .map((u) => u.id);
}

const cases: { query: string; match: (u: U) => boolean }[] = [
  { query: "status=limited", match: (u) => u.status === "limited" },
  {
    query: "status=limited,expired,disabled",
    match: (u) => ["limited", "expired", "disabled"].includes(u.status),
  },
  { query: "status=active,limited", match: (u) => ["active", "limited"].includes(u.status) },
  {
    query: `expires_before=${encodeURIComponent(inDays(5))}`,
    match: (u) => u.expire_at !== null && Date.parse(u.expire_at) < Date.now() + 5 * DAY,
  },
  {
    query: "used_over_percent=80",
    match: (u) => u.data_limit_bytes !== null && u.used_bytes * 100 >= 80 * u.data_limit_bytes,
  },
  {
    query: "used_over_percent=100&status=limited,disabled",
    match: (u) =>
      u.data_limit_bytes !== null &&
      u.used_bytes >= u.data_limit_bytes &&
      ["limited", "disabled"].includes(u.status),
  },
  { query: "used_over_percent=0", match: (u) => u.data_limit_bytes !== null },
  { query: "", match: () => true },
];

describe("filters", () => {
  test("the statuses the fixture should have", () => {
    const count = (s: string) => everyone.filter((u) => u.status === s).length;
    assert.deepEqual(
      [count("active"), count("limited"), count("expired"), count("disabled")],
      [12, 4, 4, 4],
      JSON.stringify(everyone.map((u) => [u.name, u.status])),
    );
  });

  for (const { query, match } of cases) {
    for (const [key, order] of [
      ["created_at", "asc"],
      ["created_at", "desc"],
      ["used_bytes", "asc"],
      ["used_bytes", "desc"],
      ["expire_at", "asc"],
      ["expire_at", "desc"],
    ] as const) {
      const q = `${query}&sort=${key}&order=${order}`;
      test(`${q}: the matching users in order, by cursor and by page, with their total`, async () => {
        const expected = sorted(everyone.filter(match), key, order);
        assert.ok(expected.length > 0 || query === "", q);
        const byCursor = await walkCursor(q, 3);
        assert.deepEqual(byCursor.ids, expected, q);
        assert.ok(
          byCursor.totals.every((n) => n === expected.length),
          `${q}: ${byCursor.totals}`,
        );
        assert.deepEqual(await walkPages(q, 3), expected, `${q} by page`);
      });
    }
  }

  test("page numbers read by OFFSET (deep pages) give the same order as the ranges", async () => {
    // Every page number past the first read by OFFSET over one query (the service's deep path).
    const deep = new UserListService(
      new UserFiltersRepository(t.deps.database.db, t.deps.database.dialect),
      NO_PUBLIC_URL,
      0,
    );
    for (const { query, match } of cases) {
      for (const [key, order] of [
        ["created_at", "desc"],
        ["used_bytes", "asc"],
        ["expire_at", "asc"],
        ["expire_at", "desc"],
      ] as const) {
        const params = Object.fromEntries(new URLSearchParams(query));
        const ids: string[] = [];
        for (let page = 1; page < 20; page++) {
          const body = await deep.list({
            ...params,
            ...(params.used_over_percent ? { used_over_percent: Number(params.used_over_percent) } : {}),
            sort: key,
            order,
            page,
            per_page: 5,
          });
          ids.push(...body.items.map((u) => u.id));
          if (body.next_cursor === null) break;
        }
        assert.deepEqual(ids, sorted(everyone.filter(match), key, order), `${query} ${key} ${order}`);
      }
    }
  });

  test("used_over_percent is exact at the boundary; unlimited users never match", async () => {
    const at80 = (await get("/api/users?used_over_percent=80&per_page=100")).json().items as U[];
    const names = at80.map((u) => u.name);
    for (let i = 0; i < 4; i++) assert.ok(names.includes(`eighty-${i}`));
    assert.ok(!names.some((n) => n.startsWith("half-") || n.startsWith("unlimited-")));
    const at81 = (await get("/api/users?used_over_percent=81&per_page=100")).json().items as U[];
    assert.ok(!at81.some((u) => u.name.startsWith("eighty-")));
    // A zero limit is reached at once, whatever the percentage.
    const off = (await get("/api/users?used_over_percent=1000&per_page=100")).json().items as U[];
    assert.deepEqual(off.map((u) => u.name).sort(), ["off-0", "off-1", "off-2", "off-3"]);
  });

  test("the seed's list is as it was: created_at order, the seed's cursor, every user counted", async () => {
    const first = (await get("/api/users?per_page=5")).json();
    assert.equal(first.total, 24);
    const cursor = JSON.parse(Buffer.from(first.next_cursor, "base64url").toString());
    assert.deepEqual(Object.keys(cursor).sort(), ["a", "i", "p"]);
    const same = (await get("/api/users?per_page=5&sort=created_at&order=asc")).json();
    assert.equal(same.next_cursor, first.next_cursor);
    assert.deepEqual((await walkCursor("", 5)).ids, sorted(everyone, "created_at", "asc"));
  });

  test("a cursor works only with the filters and sort it was given out for: else 400 naming cursor", async () => {
    const first = (await get("/api/users?status=active&per_page=2")).json();
    const seed = (await get("/api/users?per_page=2")).json();
    const replays = [
      `status=limited&cursor=${first.next_cursor}`,
      `status=active&sort=used_bytes&cursor=${first.next_cursor}`,
      `status=active&order=desc&cursor=${first.next_cursor}`,
      `cursor=${first.next_cursor}`,
      `status=active&cursor=${seed.next_cursor}`,
      "status=active&cursor=bm90LWpzb24",
      `status=active&cursor=${Buffer.from(JSON.stringify({ v: "x", i: "y", p: 2, t: 1, k: "z" })).toString("base64url")}`,
    ];
    for (const query of replays) {
      const res = await get(`/api/users?per_page=2&${query}`);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.match(res.headers["content-type"] as string, /problem\+json/);
      assert.equal(res.json().errors[0].path, "querystring.cursor", query);
    }
    // The statuses in another order are the same filter.
    const reordered = await get(`/api/users?status=active&per_page=2&cursor=${first.next_cursor}`);
    assert.equal(reordered.statusCode, 200);
    const first2 = (await get("/api/users?status=expired,limited&per_page=2")).json();
    assert.equal(
      (await get(`/api/users?status=limited,expired&per_page=2&cursor=${first2.next_cursor}`)).statusCode,
      200,
    );
  });

  test("bad filters are 400 problems naming the parameter", async () => {
    const bad: [string, string][] = [
      ["status=bogus", "querystring.status"],
      ["status=active,", "querystring.status"],
      ["status=", "querystring.status"],
      ["expires_before=tomorrow", "querystring.expires_before"],
      ["used_over_percent=-1", "querystring.used_over_percent"],
      ["used_over_percent=1001", "querystring.used_over_percent"],
      ["used_over_percent=50.5", "querystring.used_over_percent"],
      ["sort=name", "querystring.sort"],
      ["order=up", "querystring.order"],
      ["status=active&page=2&cursor=abc", "querystring.cursor"],
    ];
    for (const [query, path] of bad) {
      const res = await get(`/api/users?${query}`);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.ok(
        res.json().errors.some((e: { path: string }) => e.path.startsWith(path)),
        `${query}: ${res.body}`,
      );
    }
  });
});
