// HTTP basics: health, OpenAPI and docs, problem+json for unknown routes, request ids.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createTestApp, type TestApp } from "../test/support/app.ts";
import { packageVersion } from "./lib/version.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

test("GET /health is public and reports the package version", async () => {
  const res = await t.app.inject({ url: "/health" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: "ok", service: "portcullis", version: packageVersion });
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
