// Roles, two-factor sign-in, the owners' pages, against a real `portcullis serve`:
// - a viewer sees no write action on any page, and nothing they can send writes (no 2xx);
// - two-factor is enrolled in the browser, then sign-in needs a code this test computes (RFC 6238);
// - an owner creates an operator and disables them; the service's 409s are shown with their detail;
// - a webhook created in the browser gets real signed POSTs from the service's delivery job;
// - the audit log shows all of it.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { codeAt, stepAt } from "../../src/features/auth/totp.ts";
import { waitFor } from "../../test/support/poll.ts";
import { freePort } from "../../test/support/ports.ts";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { ADMIN, type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

const VIEWER = { username: "vera", password: "viewer password 1" };
const SUPPORT = { username: "sam", password: "support password 1" };
const TWO_FACTOR = { username: "tess", password: "two factor password" };
const OPERATOR = { username: "olga", password: "operator password" };

let stack: Stack;
let receiver: Receiver;
let seeded: { userId: string; serverId: string; templateId: string };
let base: string;

test.beforeAll(async () => {
  // One receiver for everything the service sends: webhook POSTs and the Bot API's sendMessage.
  receiver = await startReceiver();
  stack = await startStack({ core: false, env: { PORTCULLIS_TELEGRAM_API_URL: receiver.url } });
  base = stack.portcullis.baseUrl;
  await stack.api("POST", "/api/admins", { ...VIEWER, role: "viewer" });
  await stack.api("POST", "/api/admins", { ...SUPPORT, role: "support" });
  await stack.api("POST", "/api/admins", { ...TWO_FACTOR, role: "operator" });
  // Something on every page for the viewer to look at: a certificate, a server (no core behind it:
  // its inbound and grant wait as pending), an inbound, a user with a grant.
  const cert = await stack.api<{ id: string }>("POST", "/api/certificates", {
    name: "edge",
    cert_type: "self_signed",
    domain: "localhost",
  });
  const server = await stack.api<{ id: string }>("POST", "/api/servers", {
    name: "nowhere-1",
    hostname: "127.0.0.1",
    grpc_port: await freePort(),
    default_certificate_id: cert.id,
  });
  const templates = await stack.api<{ id: string; name: string }[]>("GET", "/api/templates");
  const templateId = templates.find((t) => t.name === "vless-ws-tls")?.id ?? "";
  const inbound = await stack.api<{ id: string }>("POST", `/api/servers/${server.id}/inbounds`, {
    template_id: templateId,
    port: await freePort(),
  });
  const user = await stack.api<{ id: string }>("POST", "/api/users", { name: "Wanda Viewed" });
  await stack.api("POST", `/api/servers/${server.id}/inbounds/${inbound.id}/users`, { user_id: user.id });
  seeded = { userId: user.id, serverId: server.id, templateId };
});
test.afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

/** A POST /api/auth/token from here, not the browser: its status and problem code. */
async function login(body: Record<string, string>): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${base}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { code?: string };
  return { status: res.status, ...(json.code === undefined ? {} : { code: json.code }) };
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
}

const WRITE_BUTTON =
  /^(New (user|server|inbound|template|certificate|admin|webhook)|Delete.*|Edit.*|Save|Create|Renew|Test|Sync now|Revoke access|Grant access)$/;

test("a viewer sees no write action and nothing they send writes", async ({ page }) => {
  const problems = watchForProblems(page);
  // Every call the page makes that is not a read, and what the service answered.
  const writes: string[] = [];
  page.on("response", (response) => {
    const request = response.request();
    const url = new URL(request.url());
    if (request.method() !== "GET" && url.pathname.startsWith("/api/") && url.pathname !== "/api/auth/token")
      writes.push(`${request.method()} ${url.pathname} → ${response.status()}`);
  });
  await signIn(page, base, VIEWER);
  await expect(page.getByTestId("signed-in-as")).toContainText("vera");
  await expect(page.getByTestId("signed-in-as")).toContainText("viewer");
  const nav = page.getByRole("navigation", { name: "Main navigation" });
  await expect(nav.getByRole("link", { name: "Servers" })).toBeVisible();
  for (const owners of ["Admins", "Audit log", "Webhooks"])
    await expect(nav.getByRole("link", { name: owners })).toHaveCount(0);

  const visits: { path: string; ready: () => Promise<void> }[] = [
    { path: "/", ready: () => expect(page.getByTestId("fleet-server")).toHaveCount(1) },
    { path: "/users", ready: () => expect(page.getByTestId("user-row")).toHaveCount(1) },
    { path: `/users/${seeded.userId}`, ready: () => expect(page.getByTestId("share-link")).toHaveCount(1) },
    { path: "/servers", ready: () => expect(page.getByTestId("server-card")).toHaveCount(1) },
    {
      path: `/servers/${seeded.serverId}`,
      ready: () => expect(page.getByTestId("inbound-row")).toHaveCount(1),
    },
    { path: "/templates", ready: () => expect(page.getByText("vless-ws-tls")).toBeVisible() },
    {
      path: `/templates/${seeded.templateId}`,
      ready: () => expect(page.getByTestId("template-config")).toContainText("wsSettings"),
    },
    { path: "/certificates", ready: () => expect(page.getByTestId("certificate-row")).toHaveCount(1) },
  ];
  for (const visit of visits) {
    await page.goto(`${base}/dashboard${visit.path}`);
    await visit.ready();
    // /api/auth/me has answered (the role badge) before the page is judged.
    await expect(page.getByTestId("signed-in-as")).toBeVisible();
    const main = page.getByRole("main");
    await expect(main.getByRole("button", { name: WRITE_BUTTON }), visit.path).toHaveCount(0);
    await expect(main.getByRole("checkbox"), visit.path).toHaveCount(0);
    await expect(main.getByRole("switch"), visit.path).toHaveCount(0);
    await expect(main.getByTestId("grant-picker"), visit.path).toHaveCount(0);
    await expect(main.getByTestId("audit-link"), visit.path).toHaveCount(0);
  }
  // The user's and the template's fields are there to read, not to change.
  await page.goto(`${base}/dashboard/users/${seeded.userId}`);
  await expect(page.getByRole("textbox", { name: "Name" })).toHaveAttribute("readonly", "");
  expect(writes).toEqual([]);

  // What the viewer's session may send, sent straight from the page: every write is refused.
  const statuses = await page.evaluate(
    async ({ userId, serverId }) => {
      const token = sessionStorage.getItem("portcullis.token") ?? "";
      const call = (method: string, path: string, body?: unknown) =>
        fetch(path, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }).then((r) => `${method} ${path} → ${r.status}`);
      return Promise.all([
        call("POST", "/api/users", { name: "sneaky" }),
        call("PUT", `/api/users/${userId}`, { name: "renamed" }),
        call("DELETE", `/api/users/${userId}`),
        call("POST", `/api/servers/${serverId}/sync`),
        call("DELETE", `/api/servers/${serverId}`),
        call("POST", "/api/templates", { name: "x", config: {} }),
        call("POST", "/api/admins", { username: "mallory", password: "12345678", role: "owner" }),
        call("POST", "/api/webhooks", { name: "x", url: "http://127.0.0.1:9/x" }),
      ]);
    },
    { userId: seeded.userId, serverId: seeded.serverId },
  );
  for (const status of statuses) expect(status).toMatch(/→ 403$/);

  // A deep link to an owner's page: the service's 403 is shown with its detail.
  await page.goto(`${base}/dashboard/admins`);
  await expect(page.getByTestId("error-alert")).toContainText("403");
  await expect(page.getByTestId("error-alert")).toContainText(
    "the viewer role may not do this (admins.manage)",
  );
  const stored = await stack.api<{ name: string }>("GET", `/api/users/${seeded.userId}`);
  expect(stored.name).toBe("Wanda Viewed");
  expect(problems).toEqual([]);
});

test("support sees users and their links only; a key narrowed beyond their role is refused", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  const failures: string[] = [];
  page.on("response", (response) => {
    if (response.status() >= 400)
      failures.push(`${response.request().method()} ${response.url()} → ${response.status()}`);
  });
  await signIn(page, base, SUPPORT);
  await expect(page.getByTestId("signed-in-as")).toContainText("support");
  const nav = page.getByRole("navigation", { name: "Main navigation" });
  // Support reads users and so the plans (GET /api/plans needs users.read), nothing of the fleet.
  await expect(nav.getByRole("link")).toHaveText(["Users", "Plans", "Account"]);
  await page.getByRole("link", { name: "Wanda Viewed" }).click();
  // The links and the subscription, without a call the role may not make (no servers list).
  await expect(page.getByTestId("share-link")).toHaveCount(1);
  await expect(page.getByTestId("sub-url")).toBeVisible();
  await expect(page.getByRole("main").getByRole("button", { name: WRITE_BUTTON })).toHaveCount(0);
  await expect(page.getByTestId("error-alert")).toHaveCount(0);
  expect(failures).toEqual([]);

  // API keys: one narrowed to a role beyond theirs is the service's 403 role_not_within.
  await page.getByRole("link", { name: "Account" }).click();
  await page.getByRole("tab", { name: "API keys" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("dashboards");
  await page.getByRole("combobox", { name: "Role" }).click();
  await page.getByRole("option", { name: "viewer" }).click();
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByTestId("error-detail")).toContainText(
    "a key may be narrowed to a role within yours",
  );
  await expect(page.getByText("role_not_within")).toBeVisible();
  expect(await severeViolations(page, "api keys, refused")).toEqual([]);
  await page.getByRole("combobox", { name: "Role" }).click();
  await page.getByRole("option", { name: "support" }).click();
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByRole("button", { name: "I have stored it" }).click();
  await expect(page.getByRole("row", { name: /dashboards/ }).getByTestId("role-badge")).toHaveText("support");
  expect(problems).toEqual([]);
});

test("two-factor is enrolled in the browser; signing in then takes a code from the authenticator", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base, TWO_FACTOR);
  await page.getByRole("link", { name: "Account" }).click();
  await expect(page.getByTestId("totp-status")).toHaveText("off");
  await page.getByRole("button", { name: "Turn on two-factor" }).click();
  // The API's QR code is drawn (an SVG the CSP lets in as an image) next to the secret.
  const qr = page.getByTestId("totp-qr");
  await expect(qr).toBeVisible();
  await expect
    .poll(() => qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0))
    .toBe(true);
  const secret = (await page.getByTestId("totp-secret").textContent()) ?? "";
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  expect(await severeViolations(page, "enrolment")).toEqual([]);

  // A wrong code is refused without signing out (400 totp_code_rejected: the session is fine).
  await page.getByRole("textbox", { name: "6-digit code" }).fill(wrongCode(secret));
  await page.getByRole("button", { name: "Confirm and turn on" }).click();
  await expect(page.getByTestId("error-alert")).toContainText("totp_code_rejected");
  await expect(page.getByTestId("signed-in-as")).toBeVisible();

  const confirmStep = stepAt(Date.now());
  await page.getByRole("textbox", { name: "6-digit code" }).fill(codeAt(secret, confirmStep));
  await page.getByRole("button", { name: "Confirm and turn on" }).click();
  const shown = (await page.getByTestId("recovery-codes").textContent()) ?? "";
  const codes = shown.trim().split("\n");
  expect(codes).toHaveLength(10);
  for (const code of codes) expect(code).toMatch(/^[a-z2-7]{5}-[a-z2-7]{5}$/i);
  expect(await severeViolations(page, "recovery codes")).toEqual([]);
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Download" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("portcullis-recovery-codes-tess.txt");
  expect(
    readFileSync(await download.path(), "utf8")
      .trim()
      .split("\n"),
  ).toEqual(codes);
  await page.getByRole("button", { name: "I have stored it" }).click();
  await expect(page.getByTestId("totp-status")).toHaveText("on");
  expect(await login(TWO_FACTOR)).toEqual({ status: 401, code: "totp_required" });

  // Signing in now asks for the code; a wrong one is the API's invalid_totp, the right one signs in.
  await signOut(page);
  await page.getByRole("textbox", { name: "Username" }).fill(TWO_FACTOR.username);
  await page.getByRole("textbox", { name: "Password" }).fill(TWO_FACTOR.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("This account signs in with a second factor.")).toBeVisible();
  expect(await severeViolations(page, "sign-in, second factor")).toEqual([]);
  await page.getByTestId("totp-code").fill(wrongCode(secret));
  await expect(page.getByTestId("error-alert")).toContainText("the code is wrong or was used already");
  // A code of a step after the one confirmed (each step's code works once).
  await page.getByTestId("totp-code").fill(codeAt(secret, Math.max(stepAt(Date.now()), confirmStep) + 1));
  // Signed in where the session ended: the account page.
  await expect(page.getByRole("heading", { name: "Account", level: 2 })).toBeVisible();

  // A recovery code works once instead of the app.
  await signOut(page);
  await page.getByRole("textbox", { name: "Username" }).fill(TWO_FACTOR.username);
  await page.getByRole("textbox", { name: "Password" }).fill(TWO_FACTOR.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Use a recovery code instead" }).click();
  await page.getByRole("textbox", { name: "Recovery code" }).fill(codes[0] ?? "");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText("tess");
  expect(await login({ ...TWO_FACTOR, recovery_code: codes[0] ?? "" })).toEqual({
    status: 401,
    code: "invalid_totp",
  });

  // Turned off again with another recovery code: the password alone signs in.
  await page.goto(`${base}/dashboard/account`);
  await page.getByRole("button", { name: "Use a recovery code instead" }).click();
  await page.getByRole("textbox", { name: "Recovery code" }).fill(codes[1] ?? "");
  await page.getByRole("button", { name: "Turn off two-factor" }).click();
  await expect(page.getByTestId("totp-status")).toHaveText("off");
  expect((await login(TWO_FACTOR)).status).toBe(200);
  expect(problems).toEqual([]);
});

/** A 6-digit code no step near now has. */
function wrongCode(secret: string): string {
  const now = stepAt(Date.now());
  const near = new Set([-2, -1, 0, 1, 2].map((d) => codeAt(secret, now + d)));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, "0");
    if (!near.has(code)) return code;
  }
}

test("an owner creates an operator and disables them; the service's 409s are shown", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Admins" }).click();
  await page.getByRole("button", { name: "New admin" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Username" }).fill(OPERATOR.username);
  await dialog.getByRole("textbox", { name: "Password" }).fill(OPERATOR.password);
  await expect(dialog.getByRole("combobox", { name: "Role" })).toHaveValue(/^operator/);
  await dialog.getByRole("button", { name: "Create" }).click();
  const row = page.locator('[data-testid="admin-row"][data-username="olga"]');
  await expect(row.getByTestId("role-badge")).toHaveText("operator");
  await expect(row.getByTestId("admin-status")).toHaveText("Active");
  expect((await login(OPERATOR)).status).toBe(200);

  await row.getByRole("button", { name: "Actions for olga" }).click();
  await page.getByRole("menuitem", { name: "Disable" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(row.getByTestId("admin-status")).toHaveText("disabled");
  expect(await login(OPERATOR)).toEqual({ status: 401, code: "admin_disabled" });

  // The service refuses what would lock everyone out; the page shows its words.
  const self = page.locator('[data-testid="admin-row"][data-username="admin"]');
  await self.getByRole("button", { name: "Actions for admin" }).click();
  await page.getByRole("menuitem", { name: "Delete" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(
    page.getByTestId("error-detail").filter({ hasText: "you cannot delete yourself" }),
  ).toBeVisible();
  await self.getByRole("button", { name: "Actions for admin" }).click();
  await page.getByRole("menuitem", { name: "Change role" }).click();
  await page.getByRole("dialog").getByRole("combobox", { name: "Role" }).click();
  await page.getByRole("option", { name: /^viewer/ }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Save" }).click();
  await expect(
    page.getByTestId("error-detail").filter({ hasText: "the last active owner cannot be demoted" }),
  ).toBeVisible();
  await expect(self.getByTestId("role-badge")).toHaveText("owner");
  expect(problems).toEqual([]);
});

function verifySignature(secret: string, got: { headers: Record<string, unknown>; body: string }): boolean {
  const timestamp = String(got.headers["x-portcullis-timestamp"]);
  const expected = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${got.body}`).digest("hex")}`;
  return got.headers["x-portcullis-signature"] === expected;
}

test("a webhook made in the browser gets signed POSTs from the service", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("button", { name: "New webhook" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name" }).fill("billing");
  await dialog.getByRole("textbox", { name: "URL" }).fill(`${receiver.url}/portcullis`);
  await dialog.getByRole("switch", { name: "All events" }).uncheck();
  await dialog.getByRole("checkbox", { name: "user.created" }).check();
  await dialog.getByRole("button", { name: "Create" }).click();
  const secret = (await page.getByTestId("webhook-secret").textContent()) ?? "";
  expect(secret.length).toBeGreaterThanOrEqual(16);
  await page.getByRole("button", { name: "I have stored it" }).click();
  await expect(page.getByText(secret)).toHaveCount(0);

  // An event it picked, caused in the browser: a new user.
  await page.getByRole("link", { name: "Users" }).click();
  await page.getByRole("button", { name: "New user" }).click();
  await page.getByRole("dialog").getByRole("textbox", { name: "Name" }).fill("Hooked Harry");
  await page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
  await expect(page.getByRole("heading", { name: "Hooked Harry", level: 2 })).toBeVisible();
  const created = await waitFor(
    () => receiver.received.find((r) => r.headers["x-portcullis-event"] === "user.created"),
    { timeoutMs: 30_000, what: "the user.created delivery" },
  );
  expect(created.method).toBe("POST");
  expect(created.path).toBe("/portcullis");
  expect(verifySignature(secret, created)).toBe(true);
  const event = JSON.parse(created.body) as { type: string; data: { user: { name: string } } };
  expect(event.type).toBe("user.created");
  expect(event.data.user.name).toBe("Hooked Harry");

  // The test button, and the delivery log that says both arrived.
  await page.getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("link", { name: "billing" }).click();
  await page.getByRole("button", { name: "Send a test event" }).click();
  const ping = await waitFor(
    () => receiver.received.find((r) => r.headers["x-portcullis-event"] === "webhook.test"),
    {
      timeoutMs: 30_000,
      what: "the webhook.test delivery",
    },
  );
  expect(verifySignature(secret, ping)).toBe(true);
  const rows = page.getByTestId("delivery-row");
  await expect(rows).toHaveCount(2);
  await expect(rows.getByTestId("delivery-status")).toHaveText(["delivered", "delivered"]);
  await expect(rows.filter({ hasText: "webhook.test" })).toContainText("200");
  expect(problems).toEqual([]);
});

test("Telegram notifications set up in the browser reach the Bot API", async ({ page }) => {
  const problems = watchForProblems(page);
  const token = "123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-ZQ";
  await signIn(page, base, TWO_FACTOR);
  await page.goto(`${base}/dashboard/account/telegram`);
  await expect(page.getByText("Telegram notifications are off.")).toBeVisible();
  await page.getByLabel("Bot token").fill(token);
  const chats = page.getByRole("combobox", { name: "Chats" });
  await chats.fill("-1001234567890");
  await chats.press("Enter");
  await page.getByRole("combobox", { name: "Message language" }).click();
  await page.getByRole("option", { name: "Русский" }).click();
  await page.getByRole("checkbox", { name: "user.expiring" }).uncheck();
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByText(/^saved /)).toBeVisible();
  const stored = await fetch(`${base}/api/auth/telegram`, {
    headers: {
      authorization: `Bearer ${await page.evaluate(() => sessionStorage.getItem("portcullis.token"))}`,
    },
  }).then((r) => r.json());
  expect(stored).toMatchObject({
    chat_ids: ["-1001234567890"],
    language: "ru",
    // Every event a chat may take (notifications/events.ts TELEGRAM_EVENT_TYPES) but the one unticked.
    events: [
      "user.limited",
      "user.expired",
      "user.ip_limit_warning",
      "user.ip_blocked",
      "user.device_limit_reached",
      "server.status_changed",
    ],
  });

  await page.getByRole("button", { name: "Send a test message" }).click();
  const sent = await waitFor(() => receiver.received.find((r) => r.path === `/bot${token}/sendMessage`), {
    timeoutMs: 30_000,
    what: "the Bot API's sendMessage",
  });
  expect(JSON.parse(sent.body)).toMatchObject({
    chat_id: "-1001234567890",
    text: "✅ Уведомления Portcullis приходят в этот чат.",
  });
  await expect(page.getByTestId("delivery-row").getByTestId("delivery-status")).toHaveText("delivered");
  // The token is never shown back: the field is empty again, and the page holds it nowhere.
  await page.reload();
  await expect(page.getByLabel("Bot token")).toHaveValue("");
  expect(await page.content()).not.toContain(token);
  expect(problems).toEqual([]);
});

test("the audit log shows who did all of this", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Audit log" }).click();
  const rows = page.getByTestId("audit-row");
  const outcomes = page.getByTestId("audit-outcome");
  const action = page.getByRole("combobox", { name: "Action" });
  await expect(rows.first()).toBeVisible();

  // The webhook: made by the owner; the viewer's attempt refused (403).
  await action.fill("webhooks.create");
  await expect(rows).toHaveCount(2);
  await expect(outcomes).toHaveText(["succeeded", "failed"]);
  await expect(rows.nth(0)).toContainText("201");
  await expect(rows.nth(1)).toContainText("vera");
  await expect(rows.nth(1)).toContainText("403");

  // Two-factor: tess's wrong first code (401), then the right one.
  await action.fill("totp.confirm");
  await expect(rows).toHaveCount(2);
  await expect(outcomes).toHaveText(["succeeded", "failed"]);
  await expect(rows.nth(1)).toContainText("tess");

  // Admins: the operator made in the browser (newest), the viewer's refused attempt, the three seeded.
  await action.fill("admins.create");
  await expect(rows).toHaveCount(5);
  await expect(outcomes).toHaveText(["succeeded", "failed", "succeeded", "succeeded", "succeeded"]);
  // The updates: the disable, then the refused demotion (newest first); the refused self-delete.
  await action.fill("admins.update");
  await expect(rows).toHaveCount(2);
  await expect(outcomes).toHaveText(["failed", "succeeded"]);
  await expect(rows.nth(0)).toContainText("409");
  await action.fill("admins.delete");
  await expect(rows).toHaveCount(1);
  await expect(rows).toContainText("409");

  // The viewer's refused writes are there too, as failed with 403.
  await page.getByRole("button", { name: "Clear filters" }).click();
  await page.getByRole("combobox", { name: "Actor" }).click();
  await page.getByRole("option", { name: "vera" }).click();
  await page.getByRole("combobox", { name: "Outcome" }).click();
  await page.getByRole("option", { name: "failed" }).click();
  await expect(rows).toHaveCount(8);
  for (const row of await rows.all()) await expect(row).toContainText("403");

  // A user's page links to the entries that name the user.
  const harry = (await stack.api<{ id: string; name: string }[]>("GET", "/api/users/search?q=Hooked"))[0];
  await page.goto(`${base}/dashboard/users/${harry?.id}`);
  await page.getByTestId("audit-link").click();
  await expect(page.getByTestId("audit-target")).toHaveValue(harry?.id ?? "");
  // Its creation, and the reads of its share links that opening its page just made (links.read is
  // audited: docs/SECURITY.md), newest first.
  const created = rows.filter({
    has: page.getByTestId("audit-action").getByText("users.create", { exact: true }),
  });
  await expect(created).toHaveCount(1);
  await expect(created).toContainText(ADMIN.username);
  const actions = await page.getByTestId("audit-action").allTextContents();
  expect(actions.at(-1)).toBe("users.create");
  expect(actions.slice(0, -1).every((name) => name === "links.read")).toBe(true);
  expect(problems).toEqual([]);
});
