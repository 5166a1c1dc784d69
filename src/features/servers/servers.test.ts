// The servers API: CRUD with the seed's defaults, validation, and write-only credentials.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { startRecordingXray } from "../../../test/support/recording-grpc.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";

const needs = requires("openssl");

let t: TestApp;
let pem: { cert: string; key: string; otherKey: string };
needs.before(async () => {
  t = await createTestApp();
  const dir = mkdtempSync(join(tmpdir(), "servers-test-"));
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=core.test",
    "-keyout",
    join(dir, "k.pem"),
    "-out",
    join(dir, "c.pem"),
  );
  openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", join(dir, "k2.pem"));
  pem = {
    cert: readFileSync(join(dir, "c.pem"), "utf8"),
    key: readFileSync(join(dir, "k.pem"), "utf8"),
    otherKey: readFileSync(join(dir, "k2.pem"), "utf8"),
  };
});
needs.after(async () => {
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

const LEAK_TOKEN = "leakcheck-token-0123456789";

describe("creating servers", needs, () => {
  test("defaults: grpc_hostname is the hostname, grpc_port 2053, status unknown, no credentials", async () => {
    const res = await api("POST", "/api/servers", { name: "edge-1", hostname: "edge1.example.com" });
    assert.equal(res.statusCode, 201);
    const server = res.json();
    assert.equal(server.grpc_hostname, "edge1.example.com");
    assert.equal(server.grpc_port, 2053);
    assert.equal(server.status, "unknown");
    assert.equal(server.has_credentials, false);
    assert.equal(server.default_certificate_id, null);
    assert.equal(server.core, null);
    assert.deepEqual((await api("GET", `/api/servers/${server.id}`)).json(), server);
    assert.ok((await api("GET", "/api/servers")).json().some((s: { id: string }) => s.id === server.id));
  });

  test("IPv4 and IPv6 hosts are accepted", async () => {
    const res = await api("POST", "/api/servers", {
      name: "v6",
      hostname: "2001:db8::1",
      grpc_hostname: "10.0.0.7",
      grpc_port: 10085,
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().grpc_hostname, "10.0.0.7");
  });

  test("bad hosts, ports and unknown certificates are 400 naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "a", hostname: "bad host!" }, "body.hostname"],
      [{ name: "a", hostname: "ok.example", grpc_hostname: "-bad-.example" }, "body.grpc_hostname"],
      [{ name: "a", hostname: "ok.example", grpc_port: 0 }, "body.grpc_port"],
      [{ name: "a", hostname: "ok.example", grpc_port: 65536 }, "body.grpc_port"],
      [{ name: "a", hostname: "ok.example", grpc_port: "2053" }, "body.grpc_port"],
      [
        { name: "a", hostname: "ok.example", default_certificate_id: "00000000-0000-4000-8000-000000000000" },
        "body.default_certificate_id",
      ],
      [{ name: "a", hostname: "ok.example", status: "online" }, "body.status"],
    ];
    for (const [body, path] of cases) {
      const res = await api("POST", "/api/servers", body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.ok(
        res.json().errors.some((e: { path: string }) => e.path === path),
        `${path}: ${res.body}`,
      );
    }
  });

  test("a duplicate name is 409", async () => {
    assert.equal(
      (await api("POST", "/api/servers", { name: "twin", hostname: "a.example" })).statusCode,
      201,
    );
    const res = await api("POST", "/api/servers", { name: "twin", hostname: "b.example" });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, "server_name_taken");
  });
});

describe("api_credentials is write-only", needs, () => {
  test("it is stored sealed, reported only as has_credentials, and never returned", async () => {
    const creds = JSON.stringify({
      ca: pem.cert,
      cert: pem.cert,
      key: pem.key,
      server_name: "core.test",
      token: LEAK_TOKEN,
    });
    const res = await api("POST", "/api/servers", {
      name: "guarded",
      hostname: "g.example",
      api_credentials: creds,
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().has_credentials, true);
    for (const body of [
      res.body,
      (await api("GET", "/api/servers")).body,
      (await api("GET", `/api/servers/${res.json().id}`)).body,
    ]) {
      assert.ok(
        !body.includes(LEAK_TOKEN) && !body.includes("PRIVATE KEY") && !body.includes("api_credentials"),
      );
    }
    const row = await t.deps.database.db
      .selectFrom("servers")
      .select("api_credentials_sealed")
      .where("id", "=", res.json().id)
      .executeTakeFirstOrThrow();
    assert.ok(row.api_credentials_sealed?.startsWith("v1."));
    assert.ok(!row.api_credentials_sealed?.includes(LEAK_TOKEN));
    const cleared = await api("PUT", `/api/servers/${res.json().id}`, { api_credentials: null });
    assert.equal(cleared.json().has_credentials, false);
  });

  test("bad credential documents are 400 naming the key, without echoing the secret", async () => {
    const cases: [unknown, string][] = [
      ["not json leakcheck", "body.api_credentials"],
      [JSON.stringify({ tokn: LEAK_TOKEN }), "body.api_credentials.tokn"],
      [JSON.stringify({ ca: "leakcheck not a pem" }), "body.api_credentials.ca"],
      [JSON.stringify({ cert: pem.cert, key: pem.otherKey }), "body.api_credentials.key"],
      [JSON.stringify({ token: "two words leakcheck" }), "body.api_credentials.token"],
    ];
    for (const [creds, path] of cases) {
      const res = await api("POST", "/api/servers", {
        name: "bad-creds",
        hostname: "x.example",
        api_credentials: creds,
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.ok(
        res.json().errors.some((e: { path: string }) => e.path === path),
        `${path}: ${res.body}`,
      );
      assert.ok(!res.body.includes("leakcheck") && !res.body.includes("PRIVATE KEY"), res.body);
    }
  });
});

describe("updating and deleting servers", needs, () => {
  test("PUT changes only the fields present, including the status values", async () => {
    const created = (await api("POST", "/api/servers", { name: "upd", hostname: "u.example" })).json();
    for (const status of ["online", "offline", "error", "unknown"]) {
      const res = await api("PUT", `/api/servers/${created.id}`, { status });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().status, status);
      assert.equal(res.json().hostname, "u.example");
    }
    const moved = (await api("PUT", `/api/servers/${created.id}`, { grpc_port: 9999, name: "upd-2" })).json();
    assert.equal(moved.grpc_port, 9999);
    assert.equal(moved.name, "upd-2");
    assert.equal((await api("PUT", `/api/servers/${created.id}`, { status: "broken" })).statusCode, 400);
  });

  test("delete is 204 and then 404", async () => {
    const created = (await api("POST", "/api/servers", { name: "gone", hostname: "g.example" })).json();
    assert.equal((await api("DELETE", `/api/servers/${created.id}`)).statusCode, 204);
    assert.equal((await api("GET", `/api/servers/${created.id}`)).statusCode, 404);
    assert.equal((await api("DELETE", `/api/servers/${created.id}`)).statusCode, 404);
    assert.equal((await api("POST", `/api/servers/${created.id}/test`)).statusCode, 404);
  });
});

describe("api_credentials follow their endpoint", needs, () => {
  const stack = new CleanupStack();
  needs.after(() => stack.run());

  test("a bearer token never reaches an address it was not entered for", async () => {
    const [first, second] = [await startRecordingXray(stack.add), await startRecordingXray(stack.add)];
    const portOf = (address: string) => Number(address.split(":")[1]);
    const token = `${LEAK_TOKEN}-follow`;
    const created = await api("POST", "/api/servers", {
      name: "token-follow",
      hostname: "127.0.0.1",
      grpc_port: portOf(first.address),
      api_credentials: JSON.stringify({ token }),
    });
    assert.equal(created.statusCode, 201);
    const id = created.json().id;
    assert.equal((await api("POST", `/api/servers/${id}/test`)).json().connected, true);
    assert.ok(first.calls.some((call) => call.authorization === `Bearer ${token}`));

    // Moving the address without sending the credentials again is refused, and nothing moved.
    const moved = await api("PUT", `/api/servers/${id}`, { grpc_port: portOf(second.address) });
    assert.equal(moved.statusCode, 409);
    assert.equal(moved.json().code, "api_credentials_required");
    assert.equal((await api("GET", `/api/servers/${id}`)).json().grpc_port, portOf(first.address));
    await api("POST", `/api/servers/${id}/test`);
    assert.equal(second.calls.length, 0);

    // Sent again with the move (here: a new token), the new address gets only the new token.
    const resent = await api("PUT", `/api/servers/${id}`, {
      grpc_port: portOf(second.address),
      api_credentials: JSON.stringify({ token: `${token}-new` }),
    });
    assert.equal(resent.statusCode, 200);
    assert.equal((await api("POST", `/api/servers/${id}/test`)).json().connected, true);
    assert.ok(second.calls.length > 0);
    assert.ok(second.calls.every((call) => call.authorization === `Bearer ${token}-new`));

    // Cleared with the move: the next address gets no authorization at all.
    const cleared = await api("PUT", `/api/servers/${id}`, {
      grpc_port: portOf(first.address),
      api_credentials: null,
    });
    assert.equal(cleared.statusCode, 200);
    const before = first.calls.length;
    await api("POST", `/api/servers/${id}/test`);
    assert.ok(first.calls.slice(before).every((call) => call.authorization === null));
  });

  test("a token pinned to a CA may move with the server", async () => {
    const created = await api("POST", "/api/servers", {
      name: "token-pinned",
      hostname: "core.test",
      api_credentials: JSON.stringify({ token: `${LEAK_TOKEN}-pinned`, ca: pem.cert }),
    });
    const res = await api("PUT", `/api/servers/${created.json().id}`, { grpc_hostname: "core2.test" });
    assert.equal(res.statusCode, 200);
  });
});
