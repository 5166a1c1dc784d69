// A server's connection: `direct` unless asked otherwise, so existing servers change nothing; a
// `node` server reaches its core only through an enrolled agent, and says so until there is one.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

async function createServer(body: Record<string, unknown>) {
  return t.app.inject({ method: "POST", url: "/api/servers", headers: t.auth, payload: body });
}

describe("a server's connection", () => {
  test("is direct by default and can be created as node", async () => {
    const plain = await createServer({ name: "plain", hostname: "127.0.0.1" });
    assert.equal(plain.statusCode, 201);
    assert.equal(plain.json().connection, "direct");
    const node = await createServer({ name: "via-agent", hostname: "127.0.0.1", connection: "node" });
    assert.equal(node.statusCode, 201);
    assert.equal(node.json().connection, "node");
    const read = await t.app.inject({ url: `/api/servers/${node.json().id}`, headers: t.auth });
    assert.equal(read.json().connection, "node");
  });

  test("is only direct or node", async () => {
    const bad = await createServer({ name: "bad", hostname: "127.0.0.1", connection: "ssh" });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, "validation_failed");
    const created = (await createServer({ name: "switch", hostname: "127.0.0.1" })).json();
    const put = await t.app.inject({
      method: "PUT",
      url: `/api/servers/${created.id}`,
      headers: t.auth,
      payload: { connection: "node\u0000" },
    });
    assert.equal(put.statusCode, 400);
    const ok = await t.app.inject({
      method: "PUT",
      url: `/api/servers/${created.id}`,
      headers: t.auth,
      payload: { connection: "node" },
    });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().connection, "node");
  });

  test("a node server without an enrolled agent is not called, and /test says why", async () => {
    const port = await freePort();
    const created = (
      await createServer({ name: "unenrolled", hostname: "127.0.0.1", grpc_port: port, connection: "node" })
    ).json();
    const result = await t.app.inject({
      method: "POST",
      url: `/api/servers/${created.id}/test`,
      headers: t.auth,
    });
    assert.equal(result.statusCode, 200);
    assert.equal(result.json().connected, false);
    assert.match(result.json().error, /not enrolled/);
    const stats = await t.app.inject({ url: `/api/servers/${created.id}/stats`, headers: t.auth });
    assert.equal(stats.statusCode, 502);
    assert.equal(stats.json().code, "core_unavailable");
  });
});
