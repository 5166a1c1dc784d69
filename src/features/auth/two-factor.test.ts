// TOTP second factor: the RFC 6238 test vectors, enrolment with a QR code, login without the code
// failing, each code and each recovery code working once, the throttle counting wrong codes, and
// the second factor being off-limits to API keys.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ADMIN, createTestApp, type TestApp } from "../../../test/support/app.ts";
import { base32Decode, base32Encode, codeAt, matchingStep, otpauthUri, stepAt } from "./totp.ts";

describe("RFC 6238 (HMAC-SHA1)", () => {
  // Appendix B: secret "12345678901234567890"; the 8-digit values' last six digits are the 6-digit codes.
  const secret = base32Encode(Buffer.from("12345678901234567890"));
  for (const [seconds, eightDigits] of [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"],
  ] as const) {
    test(`T=${seconds} gives ${eightDigits.slice(2)}`, () => {
      assert.equal(codeAt(secret, stepAt(seconds * 1000)), eightDigits.slice(2));
    });
  }

  test("base32 round-trips and the window is one step either side, each step once", () => {
    const bytes = Buffer.from("any secret bytes!");
    assert.deepEqual(base32Decode(base32Encode(bytes)), bytes);
    const nowMs = 1_800_000_000_000;
    const step = stepAt(nowMs);
    assert.equal(matchingStep(secret, codeAt(secret, step - 1), nowMs, null), step - 1);
    assert.equal(matchingStep(secret, codeAt(secret, step + 2), nowMs, null), undefined);
    assert.equal(matchingStep(secret, codeAt(secret, step), nowMs, step), undefined, "used already");
    assert.match(
      otpauthUri(secret, "ops"),
      /^otpauth:\/\/totp\/Portcullis%3Aops\?secret=[A-Z2-7]+&issuer=Portcullis/,
    );
  });
});

describe("two-factor sign-in through the API", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
  });

  const login = (body: Record<string, string>, remoteAddress = "10.9.0.1") =>
    t.app.inject({ method: "POST", url: "/api/auth/token", payload: { ...ADMIN, ...body }, remoteAddress });
  const codeNow = (secret: string, offsetSteps = 0) => codeAt(secret, stepAt(Date.now()) + offsetSteps);

  test("enrol, confirm, then a login needs the code; each code and recovery code works once", async () => {
    const enrol = await t.app.inject({ method: "POST", url: "/api/auth/totp/enroll", headers: t.auth });
    assert.equal(enrol.statusCode, 200, enrol.body);
    const { secret, otpauth_uri, qr_svg } = enrol.json();
    assert.match(otpauth_uri, new RegExp(`secret=${secret}`));
    assert.match(qr_svg, /^<svg /);
    // Not on yet: a password alone still works until confirmed.
    assert.equal((await login({})).statusCode, 200);

    const wrong = await t.app.inject({
      method: "POST",
      url: "/api/auth/totp/confirm",
      headers: t.auth,
      payload: { code: codeNow(secret, 5) },
    });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().code, "totp_code_rejected");
    const confirm = await t.app.inject({
      method: "POST",
      url: "/api/auth/totp/confirm",
      headers: t.auth,
      payload: { code: codeNow(secret) },
    });
    assert.equal(confirm.statusCode, 200, confirm.body);
    const recovery: string[] = confirm.json().recovery_codes;
    assert.equal(recovery.length, 10);
    assert.equal(new Set(recovery).size, 10);

    const without = await login({});
    assert.equal(without.statusCode, 401);
    assert.equal(without.json().code, "totp_required");
    // The code used to confirm was spent: the next step's code (inside the window) works once.
    const next = codeNow(secret, 1);
    assert.equal((await login({ totp_code: next })).statusCode, 200);
    const replay = await login({ totp_code: next }, "10.9.0.2");
    assert.equal(replay.statusCode, 401);
    assert.equal(replay.json().code, "invalid_totp");

    const first = recovery[0] as string;
    assert.equal((await login({ recovery_code: first.toUpperCase() }, "10.9.0.3")).statusCode, 200);
    assert.equal(
      (await login({ recovery_code: first }, "10.9.0.3")).statusCode,
      401,
      "a recovery code works once",
    );
    const me = await t.app.inject({ url: "/api/auth/me", headers: t.auth });
    assert.equal(me.json().totp_enabled, true);
  });

  test("wrong codes count against the login throttle like wrong passwords", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await login({ totp_code: "000000" }, "10.9.1.1")).statusCode);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.deepEqual(statuses.slice(5), [429, 429]);
  });

  test("an API key cannot manage the second factor, and turning it off needs a code", async () => {
    const key = (
      await t.app.inject({ method: "POST", url: "/api/api-keys", headers: t.auth, payload: { name: "2fa" } })
    ).json().key;
    const byKey = await t.app.inject({
      method: "POST",
      url: "/api/auth/totp/enroll",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(byKey.statusCode, 403);
    assert.equal(byKey.json().code, "session_required");
    const noCode = await t.app.inject({
      method: "POST",
      url: "/api/auth/totp/disable",
      headers: t.auth,
      payload: {},
    });
    assert.equal(noCode.statusCode, 400);
    assert.equal((await t.app.inject({ url: "/api/auth/me", headers: t.auth })).json().totp_enabled, true);
  });

  test("an owner removes another admin's second factor (a lost phone)", async () => {
    const me = (await t.app.inject({ url: "/api/auth/me", headers: t.auth })).json();
    // A second owner does it, since the first one's own factor is what is lost.
    await t.app.inject({
      method: "POST",
      url: "/api/admins",
      headers: t.auth,
      payload: { username: "helper-owner", password: "helper-owner-password", role: "owner" },
    });
    const helper = (
      await t.app.inject({
        method: "POST",
        url: "/api/auth/token",
        payload: { username: "helper-owner", password: "helper-owner-password" },
      })
    ).json().access_token;
    const reset = await t.app.inject({
      method: "PUT",
      url: `/api/admins/${me.id}`,
      headers: { authorization: `Bearer ${helper}` },
      payload: { reset_totp: true },
    });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.equal(reset.json().totp_enabled, false);
    assert.equal((await login({}, "10.9.2.1")).statusCode, 200);
  });
});
