// Configuration is validated once; every wrong value is reported, one line each.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { ConfigError, loadConfig } from "./config.ts";

test("defaults follow PRODUCT.md", () => {
  const config = loadConfig({});
  assert.equal(config.host, "127.0.0.1");
  assert.equal(config.port, 8080);
  assert.match(config.dataDir, /\/data$/);
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.adminUsername, "admin");
  assert.equal(config.adminPassword, undefined);
});

test("every wrong value is reported at once", () => {
  try {
    loadConfig({
      PORT: "http",
      DATABASE_URL: "mysql://x",
      LOG_LEVEL: "loud",
      PORTCULLIS_ADMIN_PASSWORD: "short",
      PORTCULLIS_SECRET_KEY: "abc",
    });
    assert.fail("expected ConfigError");
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.problems.length, 5);
    assert.match(error.problems.join("\n"), /PORT must be an integer/);
    assert.match(error.problems.join("\n"), /DATABASE_URL must be a postgres/);
  }
});

test("a wrong value stops `portcullis serve` with one clear line per problem", () => {
  const result = spawnSync(process.execPath, ["bin/portcullis.mjs", "serve"], {
    env: { ...process.env, PORT: "99999", LOG_LEVEL: "chatty", DATABASE_URL: "" },
    encoding: "utf8",
    timeout: 120_000, // a cold start on a loaded machine; the process itself exits at once
  });
  assert.equal(result.status, 1);
  const lines = result.stderr.trim().split("\n");
  assert.deepEqual(lines.map((l) => l.split(" ")[1]).sort(), ["LOG_LEVEL", "PORT"]);
  assert.ok(!result.stderr.includes("    at "), "no stack trace");
});

test("convergence settings: defaults, and a lease shorter than three reconcile intervals is refused", () => {
  assert.deepEqual(loadConfig({}).convergence, {
    reconcileIntervalMs: 3000,
    reconcileConcurrency: 4,
    leaseTtlMs: 15_000,
    trafficIntervalMs: 10_000,
  });
  assert.throws(
    () => loadConfig({ PORTCULLIS_RECONCILE_INTERVAL_MS: "10000" }),
    (error) =>
      error instanceof ConfigError && /PORTCULLIS_LEASE_TTL_MS must be at least 3/.test(error.message),
  );
});

test("PORTCULLIS_TRUST_PROXY: off by default; true, a hop count, or addresses and CIDRs", () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({ PORTCULLIS_TRUST_PROXY: "true" }).trustProxy, true);
  assert.equal(loadConfig({ PORTCULLIS_TRUST_PROXY: "2" }).trustProxy, 2);
  assert.deepEqual(loadConfig({ PORTCULLIS_TRUST_PROXY: "127.0.0.1, 10.0.0.0/8,::1" }).trustProxy, [
    "127.0.0.1",
    "10.0.0.0/8",
    "::1",
  ]);
  for (const bad of ["yes", "10.0.0.0/33", "proxy.example", "1.2.3.4/8/9"]) {
    assert.throws(() => loadConfig({ PORTCULLIS_TRUST_PROXY: bad }), /PORTCULLIS_TRUST_PROXY/, bad);
  }
});
