// The agent's settings (`portcullis node run`): flags over the environment over the defaults, every
// number range-checked in one message, and the read-with-reset deadline reaching the relay.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CoreSupervisor } from "../node/supervisor.ts";
import { loadNodeConfig } from "./node-config.ts";

describe("the node agent's settings", () => {
  test("defaults: 10 s between traffic reads, 120 s for a read with reset", () => {
    const config = loadNodeConfig({}, {});
    assert.equal(config.trafficIntervalMs, 10_000);
    assert.equal(config.trafficReadTimeoutMs, 120_000);
    assert.equal(config.dir, "/var/lib/portcullis-node");
  });

  test("a flag wins over the environment", () => {
    const env = { PORTCULLIS_NODE_TRAFFIC_READ_TIMEOUT_MS: "300000" };
    assert.equal(loadNodeConfig({}, env).trafficReadTimeoutMs, 300_000);
    assert.equal(loadNodeConfig({ "traffic-read-timeout-ms": "60000" }, env).trafficReadTimeoutMs, 60_000);
  });

  test("a read with reset gets at least the 10 s of the other core calls, at most an hour; every bad value in one message", () => {
    for (const bad of ["9999", "3600001", "1.5", "abc", ""]) {
      assert.throws(
        () => loadNodeConfig({ "traffic-read-timeout-ms": bad }, {}),
        /traffic read timeout must be an integer 10000-3600000/,
        bad,
      );
    }
    assert.throws(
      () => loadNodeConfig({ "traffic-read-timeout-ms": "5", "traffic-interval-ms": "5" }, {}),
      (error: Error) =>
        /traffic interval must be/.test(error.message) && /traffic read timeout must be/.test(error.message),
    );
  });

  test("the deadline reaches the relay the agent reads its core through", () => {
    const options = { binary: "v2ray", dir: "/nonexistent", apiPort: 1 };
    const set = new CoreSupervisor({ ...options, trafficReadTimeoutMs: 300_000 });
    const unset = new CoreSupervisor(options);
    try {
      assert.equal(set.relay.resetReadTimeoutMs, 300_000);
      assert.equal(set.relay.resetReadExtraMs, 290_000, "beyond the 10 s of every call");
      assert.equal(unset.relay.resetReadTimeoutMs, 120_000);
    } finally {
      set.relay.close();
      unset.relay.close();
    }
  });
});
