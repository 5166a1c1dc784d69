// Admin authentication: tokens, throttling, logout, API keys, and the rule that every /api route
// except a short public list demands a valid bearer token.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ADMIN, createTestApp, type TestApp } from "../../../test/support/app.ts";
import { AdminsRepository } from "./admins.repository.ts";
import { AuthRepository } from "./auth.repository.ts";
import { AuthService } from "./auth.service.ts";
import { LoginThrottle } from "./throttle.ts";
import { TwoFactor } from "./two-factor.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp({}, { docsUi: true });
});
after(async () => {
  await t.close();
});

function login(username: string, password: string, remoteAddress = "10.0.0.1") {
  return t.app.inject({
    method: "POST",
    url: "/api/auth/token",
    payload: { username, password },
    remoteAddress,
  });
}

describe("token login", () => {
  test("the right password gives an opaque bearer token that opens the API", async () => {
    const res = await login(ADMIN.username, ADMIN.password, "10.0.1.1");
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.token_type, "Bearer");
    assert.equal(body.expires_in, 12 * 3600);
    assert.match(body.access_token, /^pcs_[A-Za-z0-9_-]{43}$/);
    const users = await t.app.inject({
      url: "/api/users",
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    assert.equal(users.statusCode, 200);
  });

  test("a wrong password or unknown admin is 401 invalid_credentials", async () => {
    for (const [user, pass] of [
      [ADMIN.username, "wrong password"],
      ["nobody", ADMIN.password],
    ] as const) {
      const res = await login(user, pass, "10.0.2.1");
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().code, "invalid_credentials");
    }
  });

  test("five wrong passwords from one client throttle that client with 429 and Retry-After, even for the right password", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await login("throttled-admin", `guess-${i}`, "10.0.3.1")).statusCode);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    const res = await login("throttled-admin", "guess-10", "10.0.3.1");
    assert.equal(res.statusCode, 429);
    assert.equal(res.json().code, "rate_limited");
    const retryAfter = Number(res.headers["retry-after"]);
    assert.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter}`);
  });

  test("an attacker's failures do not lock the admin out: the right password from another client signs in", async () => {
    for (let i = 0; i < 6; i++) await login(ADMIN.username, `attacker-${i}`, "10.0.3.66");
    assert.equal((await login(ADMIN.username, ADMIN.password, "10.0.3.66")).statusCode, 429);
    assert.equal((await login(ADMIN.username, ADMIN.password, "10.0.3.67")).statusCode, 200);
  });

  test("40 concurrent wrong passwords for one username are evaluated at most 5 times", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => login("concurrent-admin", `guess-${i}`, "10.0.7.1")),
    );
    const statuses = answers.map((a) => a.statusCode);
    assert.equal(statuses.filter((s) => s === 401).length, 5, statuses.join(","));
    assert.equal(statuses.filter((s) => s === 429).length, 35);
  });

  test("40 concurrent guesses with the right password among them cannot beat the budget", async () => {
    const guesses = Array.from({ length: 40 }, (_, i) => (i === 39 ? ADMIN.password : `guess-${i}`));
    const answers = await Promise.all(guesses.map((g) => login(ADMIN.username, g, "10.0.7.2")));
    const evaluated = answers.filter((a) => a.statusCode !== 429).length;
    assert.ok(evaluated <= 5, `${evaluated} attempts were evaluated`);
    assert.notEqual(answers[39]?.statusCode, 200, "the 40th guess was throttled, not evaluated");
  });

  test("one IP trying many usernames is throttled too", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await login(`spray-${i}`, "x", "10.0.4.4")).statusCode);
    assert.equal(statuses.filter((s) => s === 401).length, 20);
    assert.equal(statuses.at(-1), 429);
    assert.equal((await login(ADMIN.username, ADMIN.password, "10.0.4.4")).statusCode, 429);
    assert.equal((await login(ADMIN.username, ADMIN.password, "10.0.4.5")).statusCode, 200);
  });

  test("logout revokes the token it was called with", async () => {
    const token = (await login(ADMIN.username, ADMIN.password, "10.0.5.1")).json().access_token;
    const headers = { authorization: `Bearer ${token}` };
    assert.equal((await t.app.inject({ method: "POST", url: "/api/auth/logout", headers })).statusCode, 204);
    const after = await t.app.inject({ url: "/api/users", headers });
    assert.equal(after.statusCode, 401);
    assert.equal(after.json().code, "invalid_token");
    assert.equal((await t.app.inject({ url: "/api/users", headers: t.auth })).statusCode, 200);
  });

  test("a session token stops working when it expires", async () => {
    let nowMs = Date.parse("2026-01-01T00:00:00Z");
    const clock = () => new Date(nowMs);
    const admins = new AdminsRepository(t.deps.database.db, t.deps.database.dialect);
    const auth = new AuthService(
      new AuthRepository(t.deps.database.db),
      admins,
      new TwoFactor(admins, t.deps.secretBox, clock),
      new LoginThrottle(),
      60,
      undefined,
      clock,
    );
    const { access_token } = await auth.login(ADMIN, "10.0.6.1");
    const principal = await auth.authenticate(`Bearer ${access_token}`);
    assert.equal(principal.kind, "session");
    nowMs += 61_000;
    await assert.rejects(auth.authenticate(`Bearer ${access_token}`), { code: "invalid_token" });
  });
});

describe("API keys", () => {
  test("a key is shown once, authenticates, is listed without its secret, and stops working when deleted", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/api-keys",
      headers: t.auth,
      payload: { name: "ci-bot" },
    });
    assert.equal(created.statusCode, 201);
    const { id, key, name } = created.json();
    assert.equal(name, "ci-bot");
    assert.match(key, /^pck_/);
    const headers = { authorization: `Bearer ${key}` };
    assert.equal((await t.app.inject({ url: "/api/users", headers })).statusCode, 200);
    const list = await t.app.inject({ url: "/api/api-keys", headers: t.auth });
    const listed = list.json().find((k: { id: string }) => k.id === id);
    assert.equal(listed.name, "ci-bot");
    assert.equal(listed.key, undefined);
    assert.ok(!list.body.includes(key));
    assert.equal(
      (await t.app.inject({ method: "DELETE", url: `/api/api-keys/${id}`, headers: t.auth })).statusCode,
      204,
    );
    assert.equal((await t.app.inject({ url: "/api/users", headers })).statusCode, 401);
    assert.equal(
      (await t.app.inject({ method: "DELETE", url: `/api/api-keys/${id}`, headers: t.auth })).statusCode,
      404,
    );
  });
});

describe("every /api route needs a token", () => {
  // /api/node-join takes no admin token: its body carries the one-time join token, checked and
  // spent by the nodes service (refusals tested in src/features/nodes, the node's enrollment tests).
  const PUBLIC = ["/api/auth/token", "/api/openapi.json", "/api/docs", "/api/node-join", "/sub"];

  test("walking the registered route table: each non-public route answers 401 without or with a bad token", async () => {
    const routes = t.app.routeTable.filter((r) => r.url.startsWith("/api/") || r.url.startsWith("/sub/"));
    assert.ok(routes.length >= 10, `only ${routes.length} routes registered`);
    for (const route of routes) {
      const isDeclaredPublic = PUBLIC.some((p) => route.url === p || route.url.startsWith(`${p}/`));
      assert.equal(route.isPublic, isDeclaredPublic, `${route.method} ${route.url} public=${route.isPublic}`);
      if (route.isPublic) continue;
      const url = route.url.replace(/:[A-Za-z_]+/g, "00000000-0000-4000-8000-000000000000").replace("*", "x");
      for (const authorization of [
        undefined,
        "Bearer pcs_not-a-real-token-at-all",
        "Basic YWRtaW46YWRtaW4=",
      ]) {
        const res = await t.app.inject({
          method: route.method as "GET",
          url,
          ...(authorization === undefined ? {} : { headers: { authorization } }),
        });
        assert.equal(res.statusCode, 401, `${route.method} ${url} with ${authorization}`);
        if (route.method !== "HEAD")
          assert.equal(res.headers["content-type"], "application/problem+json; charset=utf-8");
      }
    }
  });
});

describe("behind a reverse proxy", () => {
  const attempt = (app: TestApp, password: string, forwardedFor: string) =>
    app.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: ADMIN.username, password },
      remoteAddress: "127.0.0.1",
      headers: { "x-forwarded-for": forwardedFor },
    });

  test("with PORTCULLIS_TRUST_PROXY the forwarded address is the client: one client's failures do not block another", async () => {
    const proxied = await createTestApp({ PORTCULLIS_TRUST_PROXY: "127.0.0.1" });
    try {
      for (let i = 0; i < 5; i++) await attempt(proxied, `wrong-${i}`, "203.0.113.1");
      assert.equal((await attempt(proxied, ADMIN.password, "203.0.113.1")).statusCode, 429);
      assert.equal((await attempt(proxied, ADMIN.password, "203.0.113.2")).statusCode, 200);
    } finally {
      await proxied.close();
    }
  });

  test("without it, X-Forwarded-For is ignored: a client cannot pick a fresh address per guess", async () => {
    const direct = await createTestApp();
    try {
      for (let i = 0; i < 5; i++) await attempt(direct, `wrong-${i}`, `203.0.113.${10 + i}`);
      assert.equal((await attempt(direct, ADMIN.password, "203.0.113.99")).statusCode, 429);
    } finally {
      await direct.close();
    }
  });
});
