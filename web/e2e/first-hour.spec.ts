// An operator's first hour (issue 53): a user made in one dialog with limits and two inbounds (and
// both grants on a real V2Ray core), the starter templates installed from the empty template list
// of a fresh install, every page in Persian with each number-with-unit isolated from the
// right-to-left text around it, and a 429 at sign-in that says how long to wait.
import { expect, type Page, test } from "@playwright/test";
import { freePort } from "../../test/support/ports.ts";
import { severeViolations, signIn, unitsOutsideIsolates, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

const GIB = 2 ** 30;

test.describe("with a core and the starters", () => {
  let stack: Stack;
  let serverId: string;
  const inbounds: { id: string; tag: string }[] = [];
  test.beforeAll(async () => {
    stack = await startStack({ core: true });
    const core = stack.core;
    if (core === undefined) throw new Error("no core");
    const server = await stack.api<{ id: string }>("POST", "/api/servers", {
      name: "core-1",
      hostname: "127.0.0.1",
      grpc_port: core.apiPort,
    });
    serverId = server.id;
    const templates = await stack.api<{ id: string; name: string }[]>("GET", "/api/templates");
    const trojan = templates.find((x) => x.name === "trojan-tcp-tls");
    const vmess = templates.find((x) => x.name === "vmess-ws-tls");
    if (!trojan || !vmess) throw new Error("starters missing");
    const cert = await stack.api<{ id: string }>("POST", "/api/certificates", {
      name: "localhost",
      domain: "localhost",
      cert_type: "self_signed",
    });
    for (const template of [trojan, vmess]) {
      inbounds.push(
        await stack.api<{ id: string; tag: string }>("POST", `/api/servers/${serverId}/inbounds`, {
          template_id: template.id,
          port: await freePort(),
          certificate_id: cert.id,
        }),
      );
    }
  });
  test.afterAll(async () => {
    await stack?.stop();
  });

  test("one dialog makes a user with limits, a reset period, an expiry and two inbounds", async ({
    page,
  }) => {
    const problems = watchForProblems(page);
    const base = stack.portcullis.baseUrl;
    await signIn(page, base);
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByRole("button", { name: "New user" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("One Dialog Dora");
    await dialog.getByRole("textbox", { name: "Data limit" }).fill("7.5");
    await dialog.getByTestId("limit-reset").click();
    await page.getByRole("option", { name: "Every month (the 1st)" }).click();
    const expiry = new Date(Date.now() + 30 * 86_400_000);
    const pad = (n: number) => String(n).padStart(2, "0");
    const local = `${expiry.getFullYear()}-${pad(expiry.getMonth() + 1)}-${pad(expiry.getDate())}T12:00`;
    await dialog.getByLabel("Expiry", { exact: true }).fill(local);
    for (const inbound of inbounds) {
      await dialog.getByTestId("create-user-inbounds").click();
      await page.getByRole("option", { name: new RegExp(inbound.tag) }).click();
    }
    await page.keyboard.press("Escape"); // closes the option list, not the dialog
    expect(await severeViolations(page, "new user dialog")).toEqual([]);
    await dialog.getByRole("button", { name: "Create", exact: true }).click();

    // The user's page: both grants there, synced, with links.
    await expect(page.getByRole("heading", { name: "One Dialog Dora", level: 2 })).toBeVisible();
    const grants = page.getByTestId("grant");
    await expect(grants).toHaveCount(2);
    await expect(page.getByTestId("sync-state")).toHaveText(["synced", "synced"]);
    await expect(page.getByTestId("share-link")).toHaveCount(2);

    // What the API stored: one user with these limits and exactly the two grants.
    const found = await stack.api<
      { id: string; data_limit_bytes: number; data_limit_reset: string; expire_at: string }[]
    >("GET", `/api/users/search?q=${encodeURIComponent("One Dialog Dora")}`);
    expect(found).toHaveLength(1);
    const [user] = found;
    if (user === undefined) throw new Error("no user");
    expect(user.data_limit_bytes).toBe(7.5 * GIB);
    expect(user.data_limit_reset).toBe("month");
    expect(Date.parse(user.expire_at)).toBe(new Date(local).getTime());
    const access = await stack.api<{ server_inbound_id: string; sync_state: string }[]>(
      "GET",
      `/api/users/${user.id}/access`,
    );
    expect(access.map((a) => a.server_inbound_id).sort()).toEqual(inbounds.map((i) => i.id).sort());
    expect(problems).toEqual([]);
  });

  test("many users from a prefix in the same dialog", async ({ page }) => {
    const base = stack.portcullis.baseUrl;
    await signIn(page, base);
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByRole("button", { name: "New user" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Many users").click();
    await dialog.getByRole("textbox", { name: "Name prefix" }).fill("resell-");
    await dialog.getByRole("textbox", { name: "Number of users" }).fill("3");
    await dialog.getByTestId("create-user-inbounds").click();
    await page.getByRole("option", { name: new RegExp(inbounds[0]?.tag ?? "?") }).click();
    await page.keyboard.press("Escape");
    await dialog.getByRole("button", { name: "Create", exact: true }).click();
    await expect(page.getByText("3 users created")).toBeVisible();
    const made = await stack.api<{ id: string; name: string }[]>("GET", "/api/users/search?q=resell-");
    expect(made.map((u) => u.name).sort()).toEqual(["resell-1", "resell-2", "resell-3"]);
    for (const user of made) {
      const access = await stack.api<{ server_inbound_id: string }[]>("GET", `/api/users/${user.id}/access`);
      expect(access.map((a) => a.server_inbound_id)).toEqual([inbounds[0]?.id]);
    }
  });

  test("every page in Persian: no number with a unit outside an isolate, the back arrow mirrored", async ({
    browser,
  }) => {
    test.setTimeout(600_000); // nineteen pages and the subscription page, on a shared two-core machine
    const base = stack.portcullis.baseUrl;
    // Something to show on every page: a user with a limit and traffic, an expired one.
    const user = await stack.api<{ id: string; subscription_url: string }>("POST", "/api/users", {
      name: "Parisa",
      data_limit_bytes: 10 * GIB,
      inbound_ids: inbounds.map((i) => i.id),
    });
    await stack.api("POST", "/api/users", {
      name: "Expired Ehsan",
      expire_at: new Date(Date.now() - 86_400_000).toISOString(),
      data_limit_bytes: GIB,
    });
    // A group with both inbounds and Parisa in it, and a plan with a limit (a number with a unit).
    const group = await stack.api<{ id: string }>("POST", "/api/groups", {
      name: "Persian group",
      inbound_ids: inbounds.map((i) => i.id),
    });
    await stack.api("POST", `/api/groups/${group.id}/members`, { user_ids: [user.id] });
    await stack.api("POST", "/api/plans", {
      name: "Monthly",
      data_limit_bytes: 50 * GIB,
      duration_days: 30,
      group_ids: [group.id],
    });
    const context = await browser.newContext({ locale: "fa-IR" });
    const page = await context.newPage();
    try {
      await page.addInitScript(() => localStorage.setItem("portcullis.language", "fa"));
      await signInFa(page, base);
      const templates = await stack.api<{ id: string }[]>("GET", "/api/templates");
      const paths = [
        "/",
        "/users",
        `/users/${user.id}`,
        "/servers",
        `/servers/${serverId}`,
        "/templates",
        `/templates/${templates[0]?.id}`,
        "/certificates",
        "/account",
        "/account/api-keys",
        "/account/telegram",
        "/admins",
        "/audit",
        "/webhooks",
        "/settings/subscription",
        "/groups",
        `/groups/${group.id}`,
        "/plans",
        "/import",
      ];
      let isolated = 0;
      for (const path of paths) {
        await page.goto(`${base}/dashboard${path}`);
        await expect(page.locator("html")).toHaveAttribute("dir", "rtl");
        await expect(page.getByRole("heading", { level: 2 }).first()).toBeVisible();
        await page.waitForLoadState("networkidle");
        const found = await unitsOutsideIsolates(page);
        expect(found.outside, path).toEqual([]);
        isolated += found.isolated;
        if (path === `/users/${user.id}`) {
          await expect(page.getByTestId("back-arrow")).toHaveAttribute("data-flipped", "true");
        }
      }
      // The check saw the numbers it is about (the usage column, the user's usage, the stats).
      expect(isolated).toBeGreaterThan(3);
      // The public subscription page, asked for in Persian.
      await page.goto(`${base}${user.subscription_url}`);
      await expect(page.locator("html")).toHaveAttribute("dir", "rtl");
      const sub = await unitsOutsideIsolates(page);
      expect(sub.outside).toEqual([]);
      expect(sub.isolated).toBeGreaterThan(0);
    } finally {
      await context.close();
    }
  });
});

test.describe("a fresh install", () => {
  let stack: Stack;
  test.beforeAll(async () => {
    stack = await startStack({ core: false, starters: false });
  });
  test.afterAll(async () => {
    await stack?.stop();
  });

  test("the empty template list installs the starters; no command line, no backticks", async ({ page }) => {
    const problems = watchForProblems(page);
    const base = stack.portcullis.baseUrl;
    expect(await stack.api<unknown[]>("GET", "/api/templates")).toEqual([]);
    await signIn(page, base);
    await page.getByRole("link", { name: "Templates" }).click();
    const offer = page.getByTestId("starter-offer");
    await expect(offer).toBeVisible();
    expect(await page.locator("main").textContent()).not.toContain("`");
    await page.mouse.move(0, 0); // not hovering the navigation link just clicked (its hover colours)
    expect(await severeViolations(page, "templates empty state")).toEqual([]);
    await offer.getByTestId("install-starters").click();
    await expect(page.getByText("7 starter templates installed")).toBeVisible();
    await expect(page.getByRole("link", { name: "vless-reality-vision" })).toBeVisible();
    await expect(offer).toHaveCount(0);
    const names = (await stack.api<{ name: string }[]>("GET", "/api/templates")).map((x) => x.name);
    expect(names).toHaveLength(7);
    expect(problems).toEqual([]);
  });

  test("a 429 at sign-in says how long to wait, from Retry-After", async ({ page }) => {
    const base = stack.portcullis.baseUrl;
    // Five wrong passwords for one name from this address: the sixth is refused with Retry-After.
    let retryAfter = 0;
    for (let i = 0; i < 6; i++) {
      const res = await page.request.post(`${base}/api/auth/token`, {
        data: { username: "admin", password: `wrong-${i}` },
      });
      if (res.status() === 429) retryAfter = Number(res.headers()["retry-after"]);
    }
    expect(retryAfter).toBeGreaterThan(60);
    await page.goto(`${base}/dashboard/`);
    await page.getByRole("textbox", { name: "Username" }).fill("admin");
    await page.getByRole("textbox", { name: "Password" }).fill("wrong-again");
    await page.getByRole("button", { name: "Sign in" }).click();
    const alert = page.getByTestId("error-alert");
    await expect(alert).toContainText("Too many attempts. Try again in");
    const text = (await alert.textContent()) ?? "";
    const minutes = Number(/Try again in (\d+) minutes/.exec(text)?.[1]);
    // The wait the service sent, rounded up to minutes (a second may pass between the two answers).
    expect(Math.abs(minutes - Math.ceil(retryAfter / 60))).toBeLessThanOrEqual(1);
    // The API's own words ("try again later") are behind Details, not in the sentence read first.
    expect(text.split("Details")[0]).not.toContain("try again later");
    await expect(alert.getByTestId("error-details")).toContainText("try again later");
  });
});

async function signInFa(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/dashboard/`);
  await page.locator('input[autocomplete="username"]').fill("admin");
  await page.locator('input[autocomplete="current-password"]').fill("correct horse battery");
  await page.locator('button[type="submit"]').click();
  await expect(page.getByTestId("fleet-traffic")).toBeVisible();
}
