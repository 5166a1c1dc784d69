// A database that is not there right now is a 503 `database_unavailable` with Retry-After, never a
// 500: the drivers' errors are recognised in one place (unavailable.ts), and a real SQLite that is
// full (max_page_count reached) or busy (another connection holds the write lock past busy_timeout)
// answers the API so, then recovers by itself. PostgreSQL stopped for real: test/outage/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { request } from "../../test/support/templates.ts";
import { DatabaseUnavailableError } from "../lib/errors.ts";
import { sqliteFile } from "./connection.ts";
import { translateUnavailable } from "./unavailable.ts";

const coded = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("which driver errors mean the database is unavailable", () => {
  const unavailable: [string, unknown][] = [
    [
      "PostgreSQL admin shutdown (57P01)",
      coded("57P01", "terminating connection due to administrator command"),
    ],
    ["PostgreSQL starting up (57P03)", coded("57P03", "the database system is starting up")],
    ["PostgreSQL connection failure (08006)", coded("08006")],
    ["too many connections (53300)", coded("53300")],
    ["refused socket", coded("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432")],
    ["reset socket", coded("ECONNRESET")],
    ["refused on every address (AggregateError)", new AggregateError([coded("ECONNREFUSED")], "")],
    ["pg: connection ended", new Error("Connection terminated unexpectedly")],
    ["pg: connect timeout", new Error("timeout exceeded when trying to connect")],
    ["wrapped in a cause", new Error("outer", { cause: coded("ECONNREFUSED") })],
    ["SQLite busy", coded("SQLITE_BUSY", "database is locked")],
    ["SQLite busy snapshot", coded("SQLITE_BUSY_SNAPSHOT")],
    ["SQLite disk full", coded("SQLITE_FULL", "database or disk is full")],
    ["SQLite I/O error", coded("SQLITE_IOERR_WRITE")],
  ];
  for (const [name, error] of unavailable) {
    test(`${name} → database_unavailable`, () => {
      const translated = translateUnavailable(error);
      assert.ok(translated instanceof DatabaseUnavailableError, name);
      assert.equal(translated.status, 503);
      assert.equal(translated.cause, error);
    });
  }
  const other: [string, unknown][] = [
    ["unique violation", coded("23505")],
    ["syntax error", coded("42601")],
    ["SQLite constraint", coded("SQLITE_CONSTRAINT_UNIQUE")],
    ["SQLite error", coded("SQLITE_ERROR")],
    ["a plain error", new Error("boom")],
    ["not an error", "text"],
  ];
  for (const [name, error] of other) {
    test(`${name} stays what it was`, () => {
      assert.equal(translateUnavailable(error), error);
    });
  }
});

describe("a real SQLite that cannot write answers 503, then recovers", {
  skip: process.env.DATABASE_URL !== undefined && "SQLite only",
}, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
  });

  function expectUnavailable(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) {
    assert.equal(res.statusCode, 503, JSON.stringify(res.json()));
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    assert.equal((res.json() as { code: string }).code, "database_unavailable");
    assert.equal(res.headers["retry-after"], "5");
  }

  test("disk full (max_page_count reached): writes are 503 database_unavailable, reads still 200, then writes work again", async () => {
    const db = t.deps.database.db;
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    const count = Number(pages.rows[0]?.page_count);
    await sql.raw(`PRAGMA max_page_count = ${count}`).execute(db);
    const statuses = new Map<number, number>();
    let full: Awaited<ReturnType<typeof request>> | undefined;
    for (let i = 0; i < 400 && full === undefined; i++) {
      const res = await request(t, "POST", "/api/users", { name: `filler ${i}`, comment: "x".repeat(1000) });
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode !== 201) full = res;
    }
    assert.ok(full !== undefined, `the database never filled: ${JSON.stringify([...statuses])}`);
    expectUnavailable(full);
    assert.equal((await request(t, "GET", "/api/users?per_page=1")).statusCode, 200, "reads still work");
    await sql.raw("PRAGMA max_page_count = 1073741823").execute(db);
    assert.equal(
      (await request(t, "POST", "/api/users", { name: "after the disk was freed" })).statusCode,
      201,
    );
  });

  test("busy (another connection holds the write lock past busy_timeout): 503, then 201 once it lets go", async () => {
    const sqlite = t.deps.database.sqlite;
    assert.ok(sqlite !== undefined);
    sqlite.pragma("busy_timeout = 50");
    const { default: Database } = await import("better-sqlite3");
    const other = new Database(sqliteFile(t.deps.config.dataDir));
    try {
      other.exec("BEGIN IMMEDIATE");
      expectUnavailable(await request(t, "POST", "/api/users", { name: "while locked" }));
      other.exec("ROLLBACK");
      assert.equal((await request(t, "POST", "/api/users", { name: "after the lock" })).statusCode, 201);
    } finally {
      other.close();
      sqlite.pragma("busy_timeout = 5000");
    }
  });
});
