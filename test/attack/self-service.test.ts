// Changing one's own credentials (issue 45, findings 1 and 3). A stolen owner session or API key
// must not be enough to drop the owner's second factor or set a new password: `PUT /api/admins/{self}`
// refuses both (409 cannot_reset_self), and the self-service paths need the current password and a
// code. Guessing that code at `POST /api/auth/totp/disable` spends the sign-in throttle's budget.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { codeAt, stepAt } from "../../src/features/auth/totp.ts";
import { ADMIN, createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

type Admin = {
  id: string;
  auth: { authorization: string };
  secret: string;
  password: string;
  recovery: string[];
};

/** An owner with two-factor on and a session from `ip`. */
async function ownerWith2fa(username: string, ip: string): Promise<Admin> {
  const password = `${username}-password`;
  const created = await t.app.inject({
    method: "POST",
    url: "/api/admins",
    headers: t.auth,
    payload: { username, password, role: "owner" },
  });
  assert.equal(created.statusCode, 201, created.body);
  const auth = await signIn(username, password, ip);
  const { secret } = (
    await t.app.inject({ method: "POST", url: "/api/auth/totp/enroll", headers: auth })
  ).json();
  const confirm = await t.app.inject({
    method: "POST",
    url: "/api/auth/totp/confirm",
    headers: auth,
    payload: { code: codeAt(secret, stepAt(Date.now())) },
  });
  assert.equal(confirm.statusCode, 200, confirm.body);
  return { id: created.json().id, auth, secret, password, recovery: confirm.json().recovery_codes };
}

async function signIn(username: string, password: string, ip: string, totp_code?: string) {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/auth/token",
    payload: { username, password, ...(totp_code === undefined ? {} : { totp_code }) },
    remoteAddress: ip,
  });
  assert.equal(res.statusCode, 200, res.body);
  return { authorization: `Bearer ${res.json().access_token}` };
}

const totpOn = async (auth: { authorization: string }) =>
  (await t.app.inject({ url: "/api/auth/me", headers: auth })).json().totp_enabled as boolean;

describe("an admin's own credentials change through one path", () => {
  test("PUT /api/admins/{self} with reset_totp or password is 409 cannot_reset_self, by session and by API key", async () => {
    const owner = await ownerWith2fa("self-owner", "10.45.1.1");
    const key = (
      await t.app.inject({
        method: "POST",
        url: "/api/api-keys",
        headers: owner.auth,
        payload: { name: "k" },
      })
    ).json().key as string;
    for (const headers of [owner.auth, { authorization: `Bearer ${key}` }]) {
      for (const payload of [{ reset_totp: true }, { password: "attacker-chosen-password" }]) {
        const res = await t.app.inject({ method: "PUT", url: `/api/admins/${owner.id}`, headers, payload });
        assert.equal(res.statusCode, 409, res.body);
        assert.equal(res.headers["content-type"], "application/problem+json; charset=utf-8");
        assert.equal(res.json().code, "cannot_reset_self");
        assert.match(res.json().detail, /POST \/api\/auth\/password/);
      }
    }
    assert.equal(await totpOn(owner.auth), true, "the second factor is still on");
    const oldPassword = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "self-owner", password: owner.password },
      remoteAddress: "10.45.1.2",
    });
    assert.equal(oldPassword.json().code, "totp_required", "the password was not changed");
  });

  test("POST /api/auth/password needs the current password and, with two-factor on, a code; other sessions end", async () => {
    const owner = await ownerWith2fa("pw-owner", "10.45.2.1");
    const other = await signIn(
      "pw-owner",
      owner.password,
      "10.45.2.9",
      codeAt(owner.secret, stepAt(Date.now()) + 1),
    );
    const change = (body: Record<string, string>, headers = owner.auth) =>
      t.app.inject({
        method: "POST",
        url: "/api/auth/password",
        headers,
        payload: body,
        remoteAddress: "10.45.2.1",
      });

    const wrongCurrent = await change({ current_password: "not-it-at-all", new_password: "a-new-password" });
    assert.equal(wrongCurrent.statusCode, 400);
    assert.equal(wrongCurrent.json().code, "current_password_rejected");
    const noCode = await change({ current_password: owner.password, new_password: "a-new-password" });
    assert.equal(noCode.statusCode, 400);
    assert.equal(noCode.json().code, "totp_code_rejected");

    const key = (
      await t.app.inject({
        method: "POST",
        url: "/api/api-keys",
        headers: owner.auth,
        payload: { name: "k" },
      })
    ).json().key as string;
    const byKey = await change(
      { current_password: owner.password, new_password: "a-new-password" },
      { authorization: `Bearer ${key}` },
    );
    assert.equal(byKey.statusCode, 403);
    assert.equal(byKey.json().code, "session_required");

    const ok = await change({
      current_password: owner.password,
      new_password: "a-new-password",
      recovery_code: owner.recovery[0] as string,
    });
    assert.equal(ok.statusCode, 204, ok.body);
    assert.equal(
      (await t.app.inject({ url: "/api/auth/me", headers: owner.auth })).statusCode,
      200,
      "this session stays",
    );
    assert.equal((await t.app.inject({ url: "/api/auth/me", headers: other })).statusCode, 401, "others end");
    const oldPassword = await t.app.inject({
      method: "POST",
      url: "/api/auth/token",
      payload: { username: "pw-owner", password: owner.password },
      remoteAddress: "10.45.2.3",
    });
    assert.equal(oldPassword.json().code, "invalid_credentials");
  });

  test("an owner still resets another admin's password and second factor, and the audit log has it", async () => {
    const target = await ownerWith2fa("lost-phone", "10.45.3.1");
    for (const payload of [{ reset_totp: true }, { password: "reset-by-owner-password" }]) {
      const res = await t.app.inject({
        method: "PUT",
        url: `/api/admins/${target.id}`,
        headers: t.auth,
        payload,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    assert.equal(
      (await signIn("lost-phone", "reset-by-owner-password", "10.45.3.2")).authorization.length > 10,
      true,
    );
    const log = await t.app.inject({
      url: `/api/audit?action=admins.update&target=${target.id}`,
      headers: t.auth,
    });
    const fields = (log.json().items as { fields: string[]; status: number; actor: { name: string } }[]).map(
      (e) => `${e.actor.name}:${e.status}:${e.fields.join(",")}`,
    );
    assert.deepEqual(fields.sort(), [`${ADMIN.username}:200:password`, `${ADMIN.username}:200:reset_totp`]);
  });
});

describe("POST /api/auth/totp/disable has the sign-in budget", () => {
  test("300 wrong codes: 5 are judged (400), the rest are 429 with Retry-After, and the factor stays on", async () => {
    const owner = await ownerWith2fa("guessed", "10.45.4.1");
    const statuses = new Map<number, number>();
    let retryAfter: string | undefined;
    for (let i = 0; i < 300; i++) {
      const res = await t.app.inject({
        method: "POST",
        url: "/api/auth/totp/disable",
        headers: owner.auth,
        payload: { totp_code: String(i).padStart(6, "0") },
        remoteAddress: "10.45.4.1",
      });
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode === 429) {
        retryAfter = res.headers["retry-after"] as string;
        assert.equal(res.json().code, "rate_limited");
      }
    }
    console.log(`totp/disable: 300 wrong codes → ${[...statuses].map(([s, n]) => `${s}×${n}`).join(", ")}`);
    assert.deepEqual(Object.fromEntries(statuses), { 400: 5, 429: 295 });
    assert.ok(Number(retryAfter) > 0, `Retry-After ${retryAfter}`);
    // Past the budget even the right code waits: guessing cannot be sped up.
    const right = await t.app.inject({
      method: "POST",
      url: "/api/auth/totp/disable",
      headers: owner.auth,
      payload: { totp_code: codeAt(owner.secret, stepAt(Date.now()) + 1) },
      remoteAddress: "10.45.4.1",
    });
    assert.equal(right.statusCode, 429);
    assert.equal(await totpOn(owner.auth), true);
    assert.equal((await t.app.inject({ url: "/api/auth/me", headers: owner.auth })).statusCode, 200);
  });

  test("wrong current passwords at POST /api/auth/password spend the same budget", async () => {
    const owner = await ownerWith2fa("pw-guessed", "10.45.5.1");
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await t.app.inject({
        method: "POST",
        url: "/api/auth/password",
        headers: owner.auth,
        payload: { current_password: `guess-${i}`, new_password: "whatever-new-password" },
        remoteAddress: "10.45.5.1",
      });
      statuses.push(res.statusCode);
    }
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429, 429]);
  });
});
