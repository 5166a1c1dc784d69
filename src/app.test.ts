// HTTP basics: health, OpenAPI and docs, problem+json for unknown routes, request ids.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createTestApp, type TestApp } from "../test/support/app.ts";
import { packageVersion } from "./lib/version.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp({}, { docsUi: true });
});
after(async () => {
  await t.close();
});

test("GET /health is public, reports the package version and that the database is up", async () => {
  const res = await t.app.inject({ url: "/health" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), {
    status: "ok",
    service: "portcullis",
    version: packageVersion,
    dependencies: { database: "up" },
  });
});

test("GET /health is 503 naming the database, with Retry-After, when the database does not answer", async () => {
  const other = await createTestApp();
  try {
    await other.deps.database.close();
    const res = await other.app.inject({ url: "/health" });
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers["retry-after"], "5");
    assert.deepEqual(res.json(), {
      status: "unavailable",
      service: "portcullis",
      version: packageVersion,
      dependencies: { database: "down" },
    });
  } finally {
    await other.close().catch(() => {}); // its database is closed already
  }
});

test("the OpenAPI document is public, lists the users API and declares bearer auth", async () => {
  const res = await t.app.inject({ url: "/api/openapi.json" });
  assert.equal(res.statusCode, 200);
  const doc = res.json();
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.paths["/api/users/{id}"].put);
  assert.ok(doc.paths["/api/users/search"].get);
  assert.deepEqual(doc.components.securitySchemes.bearer, { type: "http", scheme: "bearer" });
  const docs = await t.app.inject({ url: "/api/docs" });
  assert.ok([200, 302].includes(docs.statusCode), `docs: ${docs.statusCode}`);
});

test("an unknown route is a 404 problem", async () => {
  const res = await t.app.inject({ url: "/nope" });
  assert.equal(res.statusCode, 404);
  assert.equal(res.json().code, "route_not_found");
});

test("a wrong method on a known path is a 405 problem with Allow, before authentication", async () => {
  const id = "00000000-0000-4000-8000-000000000000";
  const cases = [
    { method: "PATCH", url: `/api/users/${id}`, allow: "DELETE, GET, HEAD, PUT" },
    { method: "DELETE", url: "/api/users?page=2", allow: "GET, HEAD, POST" },
    { method: "POST", url: "/health/", allow: "GET, HEAD" },
    { method: "PUT", url: "http://example.test/api/users", allow: "GET, HEAD, POST" },
  ] as const;
  for (const { method, url, allow } of cases) {
    const res = await t.app.inject({ method, url });
    assert.equal(res.statusCode, 405, `${method} ${url}`);
    assert.equal(res.headers.allow, allow, `${method} ${url}`);
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    const body = res.json();
    assert.equal(body.code, "method_not_allowed");
    assert.equal(body.status, 405);
    assert.match(body.detail, new RegExp(`^${method} is not allowed here; allowed: ${allow}$`));
  }
  // The same path with a method it takes still goes through authentication.
  assert.equal((await t.app.inject({ method: "PUT", url: `/api/users/${id}` })).statusCode, 401);
  const unknown = await t.app.inject({ method: "PATCH", url: "/api/nothing-here" });
  assert.equal(unknown.statusCode, 404);
  assert.equal(unknown.headers.allow, undefined);
});

test("responses carry a request id, and a caller's x-request-id is kept", async () => {
  const generated = await t.app.inject({ url: "/health" });
  assert.match(String(generated.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
  const given = await t.app.inject({ url: "/health", headers: { "x-request-id": "trace-123" } });
  assert.equal(given.headers["x-request-id"], "trace-123");
});

test("health is 503 when the database is gone", async () => {
  const other = await createTestApp();
  await other.deps.database.close();
  const res = await other.app.inject({ url: "/health" });
  assert.equal(res.statusCode, 503);
  assert.equal(res.json().status, "unavailable");
  await other.app.close();
});
