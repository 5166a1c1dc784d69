// The client's small parts: api_credentials parsing (never echoing values), error classification
// and redaction of core texts, and the per-server connection pool.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import { parseApiCredentials, usesTls } from "./api-credentials.ts";
import type { CoreClient } from "./core-client.ts";
import { CorePool } from "./core-pool.ts";
import { mapGrpcError } from "./grpc-errors.ts";

const PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

function serviceError(code: status, details: string) {
  return Object.assign(new Error(details), { code, details, metadata: new Metadata() });
}

describe("api_credentials", () => {
  test("parses the JSON document or its text", () => {
    const doc = { ca: PEM_CERT, cert: PEM_CERT, key: PEM_KEY, server_name: "core.example", token: "tok" };
    assert.deepEqual(parseApiCredentials(doc), doc);
    assert.deepEqual(parseApiCredentials(JSON.stringify({ token: "tok" })), { token: "tok" });
  });

  test("names bad fields without echoing their values", () => {
    const secret = "super-secret-token\nline2";
    assert.throws(
      () => parseApiCredentials({ ca: "not pem", cert: PEM_CERT, token: secret, extra: 1 }),
      (error: { code: string; message: string; details: { path: string }[] }) => {
        assert.equal(error.code, "validation_failed");
        assert.deepEqual(error.details.map((detail) => detail.path).sort(), [
          "api_credentials",
          "api_credentials.ca",
          "api_credentials.extra",
          "api_credentials.token",
        ]);
        assert.doesNotMatch(JSON.stringify(error) + error.message, /super-secret|not pem/);
        return true;
      },
    );
  });

  test("TLS is used with TLS material, or for a token leaving the machine", () => {
    assert.equal(usesTls(undefined, "10.0.0.1:8080"), false);
    assert.equal(usesTls({ token: "t" }, "127.0.0.1:8080"), false);
    assert.equal(usesTls({ token: "t" }, "unix:///run/xray/api.sock"), false);
    assert.equal(usesTls({ token: "t" }, "core.example:8443"), true);
    assert.equal(usesTls({ ca: PEM_CERT }, "127.0.0.1:8080"), true);
  });
});

describe("error mapping", () => {
  const context = { address: "127.0.0.1:1", method: "AlterInbound", secrets: ["s3cr3t-uuid", "tok-en"] };
  const cases: [status, string, string, number][] = [
    [status.UNAVAILABLE, "No connection established", "core_unavailable", 502],
    [status.DEADLINE_EXCEEDED, "Deadline exceeded", "core_timeout", 504],
    [status.UNKNOWN, "v2ray.com/core/proxy/vless: User bob@test already exists.", "core_conflict", 409],
    [status.UNKNOWN, "app/proxyman/inbound: existing tag found: x", "core_conflict", 409],
    [status.UNKNOWN, "v2ray.com/core/proxy/vless: User bob@test not found.", "core_not_found", 404],
    [
      status.UNKNOWN,
      "failed to get handler: t > v2ray.com/core/app/proxyman/inbound: handler not found: t",
      "core_not_found",
      404,
    ],
    [status.UNKNOWN, "not enough information for making a decision", "core_not_found", 404],
    [status.UNKNOWN, "failed to listen TCP on 1 > bind: address already in use", "core_error", 502],
    [status.UNIMPLEMENTED, "unknown service", "core_unsupported", 422],
    [status.UNAUTHENTICATED, "bad token", "core_auth_failed", 502],
  ];
  for (const [code, details, expected, httpStatus] of cases) {
    test(`${status[code]} "${details.slice(0, 40)}" -> ${expected}`, () => {
      const error = mapGrpcError(serviceError(code, details), context);
      assert.equal(error.code, expected);
      assert.equal(error.status, httpStatus);
    });
  }

  test("credentials echoed by the core are cut out of the message", () => {
    const error = mapGrpcError(
      serviceError(status.UNKNOWN, "failed to parse ID > invalid UUID: s3cr3t-uuid (tok-en)"),
      context,
    );
    assert.doesNotMatch(error.message, /s3cr3t|tok-en/);
    assert.match(error.message, /\[redacted\]/);
  });
});

describe("CorePool", () => {
  function fakePool() {
    const created: { address: string; closed: boolean }[] = [];
    const pool = new CorePool({}, (options) => {
      const record = { address: options.address, closed: false };
      created.push(record);
      return { close: () => (record.closed = true) } as unknown as CoreClient;
    });
    return { pool, created };
  }

  test("reuses a server's client until its address or credentials change", () => {
    const { pool, created } = fakePool();
    const first = pool.get({ serverId: "s1", address: "a:1" });
    assert.equal(pool.get({ serverId: "s1", address: "a:1" }), first);
    pool.get({ serverId: "s1", address: "a:1", credentials: { token: "t" } });
    assert.deepEqual(
      created.map((c) => c.closed),
      [true, false],
    );
    pool.get({ serverId: "s2", address: "a:1" });
    assert.equal(pool.size, 2);
  });

  test("close(serverId) and closeAll() release channels", () => {
    const { pool, created } = fakePool();
    pool.get({ serverId: "s1", address: "a:1" });
    pool.get({ serverId: "s2", address: "b:1" });
    pool.close("s1");
    assert.deepEqual(
      created.map((c) => c.closed),
      [true, false],
    );
    pool.closeAll();
    assert.deepEqual(
      created.map((c) => c.closed),
      [true, true],
    );
    assert.equal(pool.size, 0);
  });
});
