import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { ConfigError, loadConfig } from "../../config/config.ts";
import { CSP_API } from "../../lib/security-headers.ts";

const INDEX = `<!doctype html><html><head><base href="/dashboard/" />
<meta name="portcullis-style-nonce" content="__CSP_NONCE__" />
<script type="module" crossorigin src="./assets/index-abc.js"></script></head><body></body></html>`;

function builtDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-dashboard-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), INDEX);
  writeFileSync(join(dir, "assets", "index-abc.js"), "console.log('dashboard')");
  writeFileSync(join(dir, "assets", "index-abc.js.gz"), gzipSync("console.log('dashboard')"));
  writeFileSync(join(dir, ".build-stamp"), "secret-ish\n");
  return dir;
}

describe("the dashboard's files", () => {
  let t: TestApp;
  let dir: string;
  before(async () => {
    dir = builtDir();
    t = await createTestApp({ PORTCULLIS_DASHBOARD_DIR: dir });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("index.html is served without a token, with a strict CSP whose style nonce is the one in the page", async () => {
    const response = await t.app.inject({ method: "GET", url: "/dashboard/" });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers["content-type"]), /^text\/html/);
    const csp = String(response.headers["content-security-policy"]);
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    assert.ok(nonce !== undefined && nonce.length >= 16, csp);
    assert.ok(response.body.includes(`content="${nonce}"`), "the page carries the header's nonce");
    assert.ok(!response.body.includes("__CSP_NONCE__"));
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'self'",
    ]) {
      assert.ok(csp.includes(directive), `${directive} in ${csp}`);
    }
    assert.ok(!/unsafe-inline|unsafe-eval|https?:|\*/.test(csp), `no inline, eval or other origin: ${csp}`);
    const again = await t.app.inject({ method: "GET", url: "/dashboard" });
    assert.notEqual(/'nonce-([^']+)'/.exec(String(again.headers["content-security-policy"]))?.[1], nonce);
  });

  test("a deep link gets the app; an unknown asset is 404; dotfiles and .. are never files", async () => {
    const deep = await t.app.inject({
      method: "GET",
      url: "/dashboard/users/7d0c0d5e-1111-4222-8333-444455556666",
    });
    assert.equal(deep.statusCode, 200);
    assert.ok(deep.body.includes("<base href"));
    assert.equal(
      (await t.app.inject({ method: "GET", url: "/dashboard/assets/missing.js" })).statusCode,
      404,
    );
    const stamp = await t.app.inject({ method: "GET", url: "/dashboard/.build-stamp" });
    assert.ok(!stamp.body.includes("secret-ish"));
    // Encoded traversal, encoded slashes, NUL: the app, the one asset asked for, or 404; never a
    // file outside the build and never a 500.
    const cases: [string, "app" | "asset" | 404 | 400][] = [
      ["/dashboard/assets/%2e%2e/index.html", "app"],
      ["/dashboard/assets/..%2f..%2fpackage.json", "app"],
      ["/dashboard/%2e%2e/%2e%2e/package.json", 404],
      // NUL anywhere in a request is refused before any route runs (lib/input-guard.ts).
      ["/dashboard/assets/index-abc.js%00.png", 400],
      ["/dashboard/assets%2findex-abc.js", "asset"],
      ["/dashboard/assets/index-abc.js/", "asset"],
    ];
    for (const [url, expected] of cases) {
      const response = await t.app.inject({ method: "GET", url });
      const got =
        response.statusCode === 404 || response.statusCode === 400
          ? response.statusCode
          : response.body.includes("<base href")
            ? "app"
            : response.body === "console.log('dashboard')"
              ? "asset"
              : `${response.statusCode} ${response.body.slice(0, 60)}`;
      assert.equal(got, expected, url);
    }
  });

  test("assets are immutable, gzipped when the client accepts it, and carry a CSP too", async () => {
    const plain = await t.app.inject({ method: "GET", url: "/dashboard/assets/index-abc.js" });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.body, "console.log('dashboard')");
    assert.match(String(plain.headers["content-type"]), /^text\/javascript/);
    assert.match(String(plain.headers["cache-control"]), /immutable/);
    assert.equal(plain.headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
    const gzip = await t.app.inject({
      method: "GET",
      url: "/dashboard/assets/index-abc.js",
      headers: { "accept-encoding": "gzip, br" },
    });
    assert.equal(gzip.headers["content-encoding"], "gzip");
  });

  test("the API stays behind its token and the subscription path is untouched", async () => {
    assert.equal((await t.app.inject({ method: "GET", url: "/api/users" })).statusCode, 401);
    const sub = await t.app.inject({ method: "GET", url: "/sub/not-a-uuid" });
    assert.equal(sub.statusCode, 404);
    // The API's own policy, not the dashboard's (every answer carries one: lib/security-headers.ts).
    assert.equal(sub.headers["content-security-policy"], CSP_API);
  });
});

describe("the dashboard's mount path", () => {
  test("is configurable, and a second path serves the same app with its own <base href>", async () => {
    const dir = builtDir();
    const t = await createTestApp({
      PORTCULLIS_DASHBOARD_DIR: dir,
      PORTCULLIS_DASHBOARD_PATH: "/admin/panel/",
    });
    try {
      const response = await t.app.inject({ method: "GET", url: "/admin/panel/servers" });
      assert.equal(response.statusCode, 200);
      assert.ok(response.body.includes('<base href="/admin/panel/" />'));
      assert.equal((await t.app.inject({ method: "GET", url: "/dashboard/" })).statusCode, 404);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("off serves nothing; a path inside /api, /sub or /health is refused at start", async () => {
    const t = await createTestApp({ PORTCULLIS_DASHBOARD_PATH: "off" });
    try {
      assert.equal((await t.app.inject({ method: "GET", url: "/dashboard/" })).statusCode, 404);
    } finally {
      await t.close();
    }
    for (const path of ["/api/ui", "/sub", "/health/x", "dashboard", "/a b"]) {
      assert.throws(() => loadConfig({ PORTCULLIS_DASHBOARD_PATH: path }), ConfigError, path);
    }
  });

  test("without a build it says how to make one instead of a blank page", async () => {
    const t = await createTestApp({ PORTCULLIS_DASHBOARD_DIR: join(tmpdir(), "portcullis-no-such-build") });
    try {
      const response = await t.app.inject({ method: "GET", url: "/dashboard/" });
      assert.equal(response.statusCode, 503);
      assert.match(response.body, /npm run build:web/);
    } finally {
      await t.close();
    }
  });
});
