// Every main page, light and dark, desktop and phone: no serious or critical accessibility violation
// (axe), no CSP violation, and (with UPDATE_SCREENSHOTS=1) the screenshots under docs/screenshots/.
// The owner's pages (admins with a reseller's quotas, audit log, webhooks, subscription settings,
// import), the account's tabs, groups, plans and an inbound's hosts are among them, with the service's
// notifications delivered to a local receiver (webhooks and the Bot API).
// Plus what people need beyond looks: Persian turns the layout right-to-left, the keyboard reaches
// a user from the search box, and an API key's secret is shown once.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, type Page, test } from "@playwright/test";
import { SCOPABLE_PERMISSIONS as SCOPABLE } from "../../src/lib/roles.ts";
import { freePort } from "../../test/support/ports.ts";
import { severeViolations, watchForProblems } from "./support/pages.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { ADMIN, type Stack, startStack } from "./support/stack.ts";

const SHOTS = fileURLToPath(new URL("../../docs/screenshots/", import.meta.url));
const UPDATE = process.env.UPDATE_SCREENSHOTS === "1";

type Ids = {
  userId: string;
  serverId: string;
  templateId: string;
  webhookId: string;
  groupId: string;
  hostsTag: string;
};
let stack: Stack;
let receiver: Receiver;
let ids: Ids;
let token: string;

async function seed(s: Stack): Promise<Ids> {
  const core = s.core;
  if (core === undefined) throw new Error("no core");
  const cert = await s.api<{ id: string }>("POST", "/api/certificates", {
    name: "edge-localhost",
    cert_type: "self_signed",
    domain: "localhost",
  });
  const server = await s.api<{ id: string }>("POST", "/api/servers", {
    name: "amsterdam-1",
    hostname: "127.0.0.1",
    grpc_port: core.apiPort,
    default_certificate_id: cert.id,
  });
  await s.api("POST", `/api/servers/${server.id}/test`);
  const templates = await s.api<{ id: string; name: string }[]>("GET", "/api/templates");
  const byName = (name: string) => templates.find((t) => t.name === name)?.id ?? "";
  const vless = await s.api<{ id: string }>("POST", `/api/servers/${server.id}/inbounds`, {
    template_id: byName("vless-ws-tls"),
    port: await freePort(),
    variable_values: { ws_path: "/edge" },
  });
  const vmess = await s.api<{ id: string; tag: string }>("POST", `/api/servers/${server.id}/inbounds`, {
    template_id: byName("vmess-ws-tls"),
    port: await freePort(),
  });
  const names = ["Alice Liddell", "Bob Marley", "Carol Danvers", "Dmitri Ivanov", "Elham Rahimi", "Fang Wei"];
  const users: { id: string }[] = [];
  for (let i = 0; i < 36; i++) {
    const name = `${names[i % names.length]}${i >= names.length ? ` ${Math.floor(i / names.length) + 1}` : ""}`;
    users.push(
      await s.api("POST", "/api/users", {
        name,
        telegram_id: 5_000_000 + i,
        comment: i % 5 === 0 ? "VIP" : null,
        // The lifecycle columns with something in them: limits, expiries near, far and past, one off.
        ...(i % 3 === 0 ? { data_limit_bytes: (10 + i) * 2 ** 30 } : {}),
        ...(i % 4 === 1
          ? { expire_at: new Date(Date.now() + (i % 8 === 1 ? 3 : 60) * 86_400_000).toISOString() }
          : {}),
        ...(i % 7 === 2 ? { expire_at: new Date(Date.now() - 86_400_000).toISOString() } : {}),
        ...(i % 9 === 4 ? { status: "disabled" } : {}),
      }),
    );
  }
  const first = users[0]?.id ?? "";
  await s.api("POST", `/api/servers/${server.id}/inbounds/${vless.id}/users/bulk`, {
    user_ids: users.slice(0, 12).map((u) => u.id),
  });
  // Hosts of the VMess inbound (shown on the server page; no user holds it, so the links elsewhere stay
  // one per grant), a group over the VLESS inbound with members, and a plan that joins it.
  const hosts = `/api/servers/${server.id}/inbounds/${vmess.id}/hosts`;
  await s.api("POST", hosts, { address: "cdn.example.test", remark: "{SERVER} CDN · {DATA_LEFT}" });
  await s.api("POST", hosts, { address: "203.0.113.7", port: 8443 });
  const group = await s.api<{ id: string }>("POST", "/api/groups", {
    name: "europe",
    inbound_ids: [vless.id],
  });
  await s.api("POST", `/api/groups/${group.id}/members`, {
    user_ids: users.slice(12, 18).map((u) => u.id),
  });
  const plan = await s.api<{ id: string }>("POST", "/api/plans", {
    name: "monthly",
    data_limit_bytes: 50 * 2 ** 30,
    data_limit_reset: "month",
    duration_days: 30,
    group_ids: [group.id],
  });
  await s.api("POST", "/api/plans", { name: "trial", data_limit_bytes: 2 * 2 ** 30, duration_days: 3 });
  await s.api("POST", "/api/api-keys", { name: "billing-bot", expires_in_days: 90 });
  await s.api("POST", "/api/api-keys", { name: "grafana", role: "viewer" });
  // The team, and notifications: a webhook whose receiver takes user.created and refuses
  // user.deleted (so the log has a delivery waiting to be retried), and Telegram through the
  // receiver standing in for the Bot API.
  await s.api("POST", "/api/admins", { username: "olga", password: "operator password", role: "operator" });
  await s.api("POST", "/api/admins", { username: "sam", password: "support password", role: "support" });
  const vera = await s.api<{ id: string }>("POST", "/api/admins", {
    username: "vera",
    password: "viewer password",
    role: "viewer",
  });
  await s.api("PUT", `/api/admins/${vera.id}`, { is_disabled: true });
  // A reseller: every user permission their own, within quotas.
  await s.api("POST", "/api/admins", {
    username: "rita",
    password: "reseller password",
    role: "operator",
    scopes: Object.fromEntries(SCOPABLE.map((permission) => [permission, "own"])),
    max_users: 50,
    max_data_bytes: 500 * 2 ** 30,
    allowed_group_ids: [group.id],
    allowed_plan_ids: [plan.id],
  });
  const webhook = await s.api<{ id: string }>("POST", "/api/webhooks", {
    name: "crm",
    url: `${receiver.url}/portcullis`,
    events: ["user.created", "user.deleted", "server.status_changed"],
  });
  await s.api("POST", "/api/webhooks", {
    name: "audit-archive",
    url: `${receiver.url}/archive`,
    is_active: false,
  });
  const guest = await s.api<{ id: string }>("POST", "/api/users", { name: "Grace Hopper" });
  await s.api("DELETE", `/api/users/${guest.id}`);
  await s.api("POST", `/api/webhooks/${webhook.id}/test`);
  await s.api("PUT", "/api/auth/telegram", {
    bot_token: "123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-ZQ",
    chat_ids: ["-1001234567890", "@portcullis_alerts"],
    language: "en",
  });
  await s.api("POST", "/api/auth/telegram/test");
  return {
    userId: first,
    serverId: server.id,
    templateId: byName("vless-ws-tls"),
    webhookId: webhook.id,
    groupId: group.id,
    hostsTag: vmess.tag,
  };
}

test.beforeAll(async () => {
  receiver = await startReceiver((r) => (r.headers["x-portcullis-event"] === "user.deleted" ? 503 : 200));
  stack = await startStack({ core: true, env: { PORTCULLIS_TELEGRAM_API_URL: receiver.url } });
  ids = await seed(stack);
  const login = await fetch(`${stack.portcullis.baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ADMIN),
  });
  token = ((await login.json()) as { access_token: string }).access_token;
  if (UPDATE) mkdirSync(SHOTS, { recursive: true });
});
test.afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

const PAGES: { name: string; path: () => string; ready: (page: Page) => Promise<void> }[] = [
  {
    name: "sign-in",
    path: () => "/",
    ready: (p) => expect(p.getByRole("button", { name: "Sign in" })).toBeVisible(),
  },
  { name: "users", path: () => "/users", ready: (p) => expect(p.getByTestId("user-row")).toHaveCount(36) },
  {
    name: "user",
    path: () => `/users/${ids.userId}`,
    ready: (p) => expect(p.getByTestId("share-link")).toHaveCount(1),
  },
  {
    name: "servers",
    path: () => "/servers",
    ready: (p) => expect(p.getByTestId("server-status")).toHaveText("online"),
  },
  {
    name: "server",
    path: () => `/servers/${ids.serverId}`,
    ready: async (p) => {
      await expect(p.getByTestId("inbound-row")).toHaveCount(2);
      await expect(p.getByText("Uptime")).toBeVisible();
    },
  },
  {
    name: "server-hosts",
    path: () => `/servers/${ids.serverId}`,
    ready: async (p) => {
      await p.getByRole("button", { name: `Hosts of ${ids.hostsTag}` }).click();
      await expect(p.getByTestId("host-row")).toHaveCount(2);
    },
  },
  {
    name: "groups",
    path: () => "/groups",
    ready: (p) => expect(p.getByTestId("group-member-count")).toHaveText("6"),
  },
  {
    name: "group",
    path: () => `/groups/${ids.groupId}`,
    ready: async (p) => {
      await expect(p.getByTestId("group-counts")).toHaveText("1 inbound · 6 members");
      await expect(p.getByTestId("group-member")).toHaveCount(6);
    },
  },
  {
    name: "plans",
    path: () => "/plans",
    ready: (p) => expect(p.getByTestId("plan-row")).toHaveCount(2),
  },
  {
    name: "templates",
    path: () => "/templates",
    ready: (p) => expect(p.getByText("vless-ws-tls")).toBeVisible(),
  },
  {
    name: "template",
    path: () => `/templates/${ids.templateId}`,
    ready: (p) => expect(p.getByTestId("template-config")).toContainText("wsSettings"),
  },
  {
    name: "certificates",
    path: () => "/certificates",
    ready: (p) => expect(p.getByTestId("certificate-status")).toHaveText("valid"),
  },
  {
    name: "api-keys",
    path: () => "/account/api-keys",
    ready: (p) => expect(p.getByText("billing-bot")).toBeVisible(),
  },
  {
    name: "account",
    path: () => "/account",
    // Enrolment started (the QR code and the secret on screen); it stays pending, never confirmed.
    ready: async (p) => {
      await p.getByRole("button", { name: "Turn on two-factor" }).click();
      await expect(p.getByTestId("totp-qr")).toBeVisible();
      await expect
        .poll(() => p.getByTestId("totp-qr").evaluate((img: HTMLImageElement) => img.naturalWidth))
        .toBeGreaterThan(0);
    },
  },
  {
    name: "telegram",
    path: () => "/account/telegram",
    ready: (p) =>
      expect(p.getByTestId("delivery-row").filter({ hasText: "webhook.test" })).toContainText("delivered"),
  },
  {
    name: "admins",
    path: () => "/admins",
    ready: (p) => expect(p.getByTestId("admin-row")).toHaveCount(5),
  },
  {
    name: "audit",
    path: () => "/audit",
    ready: (p) => expect(p.getByTestId("audit-row").first()).toBeVisible(),
  },
  {
    name: "webhooks",
    path: () => "/webhooks",
    ready: (p) => expect(p.getByTestId("webhook-row")).toHaveCount(2),
  },
  {
    name: "webhook",
    path: () => `/webhooks/${ids.webhookId}`,
    ready: async (p) => {
      await expect(p.getByTestId("delivery-row").filter({ hasText: "user.deleted" })).toContainText("503");
      await expect(p.getByTestId("delivery-row").filter({ hasText: "user.created" })).toContainText(
        "delivered",
      );
      await expect(p.getByTestId("delivery-row").filter({ hasText: "webhook.test" })).toContainText(
        "delivered",
      );
    },
  },
  {
    name: "subscription-settings",
    path: () => "/settings/subscription",
    ready: (p) => expect(p.getByTestId("ua-rule")).toHaveCount(5),
  },
  {
    name: "import",
    path: () => "/import",
    ready: (p) => expect(p.getByRole("button", { name: "Dry run" })).toBeVisible(),
  },
];

const VARIANTS = [
  { theme: "light", device: "desktop", viewport: { width: 1280, height: 800 } },
  { theme: "dark", device: "desktop", viewport: { width: 1280, height: 800 } },
  { theme: "light", device: "phone", viewport: { width: 390, height: 844 } },
  { theme: "dark", device: "phone", viewport: { width: 390, height: 844 } },
] as const;

for (const variant of VARIANTS) {
  test(`every main page, ${variant.theme} on a ${variant.device}: accessible, CSP-clean`, async ({
    browser,
  }) => {
    test.setTimeout(600_000); // twenty-one pages, each with axe, on a shared two-core machine
    const context = await browser.newContext({
      viewport: variant.viewport,
      isMobile: variant.device === "phone",
      hasTouch: variant.device === "phone",
    });
    await context.addInitScript(
      ([scheme, signedIn]) => {
        localStorage.setItem("portcullis.color-scheme", scheme);
        localStorage.setItem("portcullis.language", "en");
        if (signedIn !== "") sessionStorage.setItem("portcullis.token", signedIn);
      },
      [variant.theme, ""] as const,
    );
    const page = await context.newPage();
    const problems = watchForProblems(page);
    const base = `${stack.portcullis.baseUrl}/dashboard`;
    for (const target of PAGES) {
      if (target.name === "users") {
        // Signed in from here on: the token goes where the sign-in form puts it.
        await page.evaluate((t) => sessionStorage.setItem("portcullis.token", t), token);
      }
      await page.goto(`${base}${target.path()}`);
      await target.ready(page);
      await expect(page.locator("html")).toHaveAttribute("data-mantine-color-scheme", variant.theme);
      expect(await severeViolations(page, target.name), `axe on ${target.name}`).toEqual([]);
      if (UPDATE) {
        await page.screenshot({ path: `${SHOTS}${target.name}-${variant.theme}-${variant.device}.png` });
      }
    }
    expect(problems).toEqual([]);
    await context.close();
  });
}

test("Persian turns the dashboard right-to-left and translates it", async ({ page }) => {
  await page.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/users`);
  await page.getByRole("combobox", { name: "Language" }).click();
  await page.getByRole("option", { name: "فارسی" }).click();
  await expect(page.locator("html")).toHaveAttribute("dir", "rtl");
  await expect(page.getByRole("heading", { name: "کاربران", level: 2 })).toBeVisible();
  if (UPDATE) await page.screenshot({ path: `${SHOTS}users-fa-light-desktop.png` });
  await page.getByRole("combobox", { name: "زبان" }).click();
  await page.getByRole("option", { name: "English" }).click();
  await expect(page.locator("html")).toHaveAttribute("dir", "ltr");
});

test("dark scheme on a phone: the users table keeps Expires, and each status keeps its own colour", async ({
  browser,
}) => {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
  });
  await context.addInitScript((t) => {
    localStorage.setItem("portcullis.color-scheme", "dark");
    localStorage.setItem("portcullis.language", "en");
    sessionStorage.setItem("portcullis.token", t);
  }, token);
  const page = await context.newPage();
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/users`);
  await expect(page.getByTestId("user-row")).toHaveCount(36);
  await expect(page.locator("html")).toHaveAttribute("data-mantine-color-scheme", "dark");
  await expect(page.getByRole("columnheader", { name: "Expires" })).toBeVisible();
  // The badge's own colour, as painted: one per status, and never the grey of a disabled user
  // for a state that needs attention.
  const colourOf = async (status: string) => {
    const badge = page.locator(`[data-testid="user-status"][data-status="${status}"]`).first();
    await expect(badge).toBeVisible();
    return badge.evaluate((el) => {
      const style = getComputedStyle(el);
      return { background: style.backgroundColor };
    });
  };
  const [active, expired, disabled] = [
    await colourOf("active"),
    await colourOf("expired"),
    await colourOf("disabled"),
  ];
  expect(
    new Set([active.background, expired.background, disabled.background]).size,
    JSON.stringify({ active, expired, disabled }),
  ).toBe(3);
  const rgb = (css: string) => (css.match(/[\d.]+/g) ?? []).map(Number);
  const [r = 0, g = 0, b = 0] = rgb(expired.background);
  expect(r, `expired reads red in the dark scheme (${expired.background})`).toBeGreaterThan(
    Math.max(g, b) + 20,
  );
  const [ar = 0, ag = 0] = rgb(active.background);
  expect(ag, `active reads green/teal in the dark scheme (${active.background})`).toBeGreaterThan(ar + 20);
  await context.close();
});

test("the keyboard finds a user: / focuses search, Tab reaches the row, Enter opens it", async ({ page }) => {
  await page.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/users`);
  await expect(page.getByTestId("user-row")).toHaveCount(36);
  await page.keyboard.press("/");
  await expect(page.getByTestId("user-search")).toBeFocused();
  await page.keyboard.type("Elham");
  await expect(page.getByTestId("user-row")).toHaveCount(6);
  const first = page.getByTestId("user-row").first().getByRole("link");
  for (let i = 0; i < 10 && !(await first.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press("Tab");
  }
  await expect(first).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: /^Elham Rahimi/, level: 2 })).toBeVisible();
});

test("an API key's secret is shown once, then never again", async ({ page }) => {
  await page.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/api-keys`);
  await expect(page).toHaveURL(/\/dashboard\/account\/api-keys$/);
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("ci");
  await page.getByRole("button", { name: "Create key" }).click();
  const secret = await page.getByTestId("api-key-secret").textContent();
  expect(secret).toMatch(/^pck_/);
  await page.getByRole("button", { name: "I have stored it" }).click();
  await expect(page.getByText("ci", { exact: true })).toBeVisible();
  await expect(page.getByText(secret ?? "")).toHaveCount(0);
  await page.reload();
  await expect(page.getByText("ci", { exact: true })).toBeVisible();
  expect(await page.content()).not.toContain(secret ?? "");
});

test("an inbound is edited with its stored variables in the form, and share links follow", async ({
  page,
}) => {
  await page.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/servers/${ids.serverId}`);
  const row = page.getByTestId("inbound-row").filter({ hasText: "vless-ws-tls" });
  await row.getByRole("button", { name: /^Edit inbound vless-ws-tls/ }).click();
  const wsPath = page.getByRole("textbox", { name: "ws_path", exact: true });
  await expect(wsPath).toHaveValue("/edge");
  await wsPath.fill("/edited-in-the-dashboard");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(row.getByTestId("sync-state")).toHaveText("synced");
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/users/${ids.userId}`);
  await expect(page.getByTestId("share-link")).toContainText("path=%2Fedited-in-the-dashboard");
});

test("a certificate is renamed in place", async ({ page }) => {
  await page.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  await page.goto(`${stack.portcullis.baseUrl}/dashboard/certificates`);
  const row = page.getByTestId("certificate-row").filter({ hasText: "edge-localhost" });
  await row.getByRole("button", { name: "Edit" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("edge-renamed");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByTestId("certificate-row").filter({ hasText: "edge-renamed" })).toHaveCount(1);
  const stored = await stack.api<{ name: string }[]>("GET", "/api/certificates");
  expect(stored.map((c) => c.name)).toEqual(["edge-renamed"]);
});
