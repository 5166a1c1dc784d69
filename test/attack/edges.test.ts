// The edges of the HTTP layer, over a real socket: errors Fastify and Node raise themselves (bad
// percent-escapes, over-long parameters, broken Content-Length, oversized headers) are problem+json
// with a code; ids have one accepted form on both dialects; NUL and deep nesting are refused;
// client request ids are bounded; every response carries the security headers; the SQLite files
// are owner-only; credential-like query values never reach a log line verbatim.
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { redactUrl } from "../../src/lib/log-serializers.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { createUser } from "../support/factories.ts";
import { type RawAnswer, rawBytes, rawRequest } from "../support/raw-http.ts";

let t: TestApp;
let port: number;
before(async () => {
  t = await createTestApp({}, { docsUi: true });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  port = (t.app.server.address() as AddressInfo).port;
});
after(async () => {
  await t.close();
});

function get(target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return rawRequest(port, { target, headers: { authorization: t.auth.authorization, ...headers } });
}

function problemOf(answer: RawAnswer): { code: string; status: number } {
  assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json/, answer.body);
  const problem = JSON.parse(answer.body) as { code: string; status: number };
  assert.equal(problem.status, answer.status);
  return problem;
}

describe("errors raised before a route runs are problems too", () => {
  test("a bad percent-escape is 400 bad_url", async () => {
    const answer = await get("/api/users/%E0%A4%A");
    assert.equal(answer.status, 400);
    assert.equal(problemOf(answer).code, "bad_url");
  });

  test("an over-long path parameter is a problem, not a crash", async () => {
    const answer = await get(`/api/users/${"a".repeat(300)}`);
    assert.ok([400, 404, 414].includes(answer.status), String(answer.status));
    assert.ok(problemOf(answer).code.length > 0);
  });

  test("a broken Content-Length is 400 malformed_request", async () => {
    const head =
      "POST /api/users HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" +
      `authorization: ${t.auth.authorization}\r\ncontent-length: 12x\r\n\r\n{"name":"x"}`;
    const answer = await rawBytes(port, Buffer.from(head));
    assert.equal(answer.status, 400);
    assert.equal(problemOf(answer).code, "malformed_request");
  });

  test("headers over Node's limit are 431 headers_too_large", async () => {
    const answer = await get("/api/users", { "x-padding": "p".repeat(20_000) });
    assert.equal(answer.status, 431);
    assert.equal(problemOf(answer).code, "headers_too_large");
  });

  test("a body that is not JSON says JSON is expected", async () => {
    const answer = await rawRequest(port, {
      method: "POST",
      target: "/api/users",
      headers: { authorization: t.auth.authorization, "content-type": "text/plain" },
      body: "name=x",
    });
    assert.equal(answer.status, 415);
    const problem = problemOf(answer) as { code: string; detail?: string };
    assert.equal(problem.code, "unsupported_media_type");
    assert.match(JSON.parse(answer.body).detail, /application\/json/);
  });

  test("/sub/<anything that is not a user> is a 404 problem", async () => {
    for (const target of [
      "/sub/xyz",
      "/sub/%00",
      "/sub/..%2fapi%2fusers",
      `/sub/${"f".repeat(500)}`,
      "/sub/",
    ]) {
      const answer = await rawRequest(port, { target });
      assert.equal(answer.status, 404, target);
      problemOf(answer);
    }
  });
});

describe("ids, NUL and nesting", () => {
  test("a user id has one accepted form: upper case and urn:uuid: are 400 on both dialects", async () => {
    const user = await createUser(t);
    assert.equal((await get(`/api/users/${user.id}`)).status, 200);
    for (const id of [user.id.toUpperCase(), `urn:uuid:${user.id}`, `{${user.id}}`]) {
      const answer = await get(`/api/users/${encodeURIComponent(id)}`);
      assert.equal(answer.status, 400, id);
      assert.equal(problemOf(answer).code, "validation_failed");
    }
  });

  test("search finds a user by an upper-case id, and NUL in q is 400, not a match-all", async () => {
    const user = await createUser(t);
    const found = await get(`/api/users/search?q=${user.id.toUpperCase()}`);
    assert.equal(found.status, 200);
    assert.deepEqual(
      (JSON.parse(found.body) as { id: string }[]).map((u) => u.id),
      [user.id],
    );
    for (const q of ["%00", "a%00", "%00%00%00"]) {
      const answer = await get(`/api/users/search?q=${q}`);
      assert.equal(answer.status, 400, q);
      assert.equal(problemOf(answer).code, "validation_failed");
    }
  });

  test("NUL in a body string is 400 naming the field", async () => {
    const answer = await rawRequest(port, {
      method: "POST",
      target: "/api/users",
      headers: { authorization: t.auth.authorization, "content-type": "application/json" },
      body: JSON.stringify({ name: "a\u0000b" }),
    });
    assert.equal(answer.status, 400);
    assert.deepEqual(JSON.parse(answer.body).errors, [
      { path: "body.name", message: "must not contain NUL characters" },
    ]);
  });

  test("a template config nested deeper than 64 levels is 422 nesting_too_deep; 60 levels is judged on its merits", async () => {
    // Built as text: JSON.stringify itself recurses.
    const deep = (depth: number) => `${'{"x":'.repeat(depth)}1${"}".repeat(depth)}`;
    const post = (settings: string) =>
      rawRequest(port, {
        method: "POST",
        target: "/api/templates",
        headers: { authorization: t.auth.authorization, "content-type": "application/json" },
        body: `{"name":"deep-${Math.random()}","config":{"protocol":"vless","settings":${settings}}}`,
      });
    const tooDeep = await post(deep(100_000));
    assert.equal(tooDeep.status, 422);
    assert.equal(problemOf(tooDeep).code, "nesting_too_deep");
    const shallow = await post(deep(60));
    assert.notEqual(shallow.status, 500);
    assert.notEqual(problemOf(shallow).code, "nesting_too_deep");
  });
});

describe("request ids, headers, files, logs", () => {
  test("a plain client X-Request-Id is echoed; anything else is replaced by a fresh one", async () => {
    assert.equal(
      (await get("/health", { "x-request-id": "trace-42.a:b" })).headers["x-request-id"],
      "trace-42.a:b",
    );
    for (const bad of ["<script>", "x".repeat(200), "a b", "é"]) {
      const echoed = (await get("/health", { "x-request-id": bad })).headers["x-request-id"] ?? "";
      assert.match(echoed, /^[0-9a-f-]{36}$/, bad);
    }
  });

  test("every answer carries nosniff, no-referrer and a CSP that forbids framing", async () => {
    const user = await createUser(t);
    const answers = [
      await get("/api/users"),
      await get("/api/users/not-a-uuid"),
      await rawRequest(port, { target: "/health" }),
      await rawRequest(port, { target: "/nothing-here" }),
      await rawRequest(port, { target: `/sub/${user.id}` }),
      await rawRequest(port, { target: `/sub/${user.id}` }), // second one: from the cache's fast path
    ];
    for (const answer of answers) {
      assert.equal(answer.headers["x-content-type-options"], "nosniff");
      assert.equal(answer.headers["referrer-policy"], "no-referrer");
      assert.match(answer.headers["content-security-policy"] ?? "", /frame-ancestors 'none'/);
    }
    const docs = await rawRequest(port, { target: "/api/docs/" });
    assert.match(docs.headers["content-type"] ?? "", /^text\/html/);
    assert.match(docs.headers["content-security-policy"] ?? "", /script-src 'self'.*frame-ancestors 'none'/);
  });

  test("the SQLite database is readable by its owner only", {
    skip: process.env.DATABASE_URL !== undefined,
  }, () => {
    if (t.deps.database.dialect !== "sqlite") return;
    const file = join(t.deps.config.dataDir, "portcullis.db");
    for (const path of [file, `${file}-wal`]) assert.equal(statSync(path).mode & 0o777, 0o600, path);
  });

  test("credential-like query values and subscription ids are redacted in logged URLs", () => {
    assert.equal(
      redactUrl("/api/users?page=2&token=abc&API_KEY=x"),
      "/api/users?page=2&token=[redacted]&API_KEY=[redacted]",
    );
    assert.equal(redactUrl("/sub/3f0e?x=1"), "/sub/[redacted]?x=1");
    assert.equal(redactUrl("/api/users?q=alice"), "/api/users?q=alice");
  });

  test("a request that carries a secret in its query string is logged without it", async () => {
    // The suite's log scan (scripts/run-tests.ts) fails the run if "leakcheck" reaches any log line.
    const answer = await get("/api/users?password=leakcheck-in-query&access_token=leakcheck-2");
    assert.equal(answer.status, 400);
  });
});
