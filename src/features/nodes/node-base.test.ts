// The base document of a node server through the API: the default until one is set, a document the
// agent would refuse is 400 with the paths, null returns to the default, an unknown server is 404.
// The agent's side (it restarts its core with a new document) is in src/node/supervisor.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { request } from "../../../test/support/templates.ts";
import { DEFAULT_BASE_DOCUMENT } from "../../cores/node-base-config.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

describe("GET/PUT /api/servers/{id}/node-base", () => {
  test("the default, a document set, one refused with its paths, and back to the default", async () => {
    const server = await registerServer(t, 2096, { connection: "node" });
    const url = `/api/servers/${server.id}/node-base`;
    const first = await request(t, "GET", url);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { document: DEFAULT_BASE_DOCUMENT, is_default: true });

    const document = {
      log: { loglevel: "info" },
      outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }],
    };
    const set = await request(t, "PUT", url, { document });
    assert.equal(set.statusCode, 200, set.body);
    assert.equal(set.json().is_default, false);
    const read = await request(t, "GET", url);
    assert.deepEqual(read.json(), { document: set.json().document, is_default: false });
    assert.equal(read.json().document.log.loglevel, "info");

    const refused = await request(t, "PUT", url, {
      document: { inbounds: [], outbounds: [{ tag: "api", protocol: "freedom" }] },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(String(refused.headers["content-type"]), /application\/problem\+json/);
    const paths = (refused.json().errors as { path: string }[]).map((e) => e.path);
    assert.ok(
      paths.some((p) => p.startsWith("body.document")),
      JSON.stringify(paths),
    );
    assert.equal((await request(t, "GET", url)).json().document.log.loglevel, "info", "unchanged");

    const reset = await request(t, "PUT", url, { document: null });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.deepEqual(reset.json(), { document: DEFAULT_BASE_DOCUMENT, is_default: true });
  });

  test("an unknown server is 404; a body that is not a document or null is 400", async () => {
    const missing = await request(t, "GET", "/api/servers/00000000-0000-4000-8000-000000000000/node-base");
    assert.equal(missing.statusCode, 404);
    const server = await registerServer(t, 2097, { connection: "node" });
    const bad = await request(t, "PUT", `/api/servers/${server.id}/node-base`, { document: [1, 2] });
    assert.equal(bad.statusCode, 400);
  });
});
