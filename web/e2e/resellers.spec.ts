// Issue 49's users and admins in the dashboard, against a real `portcullis serve`:
// - a user created from a plan in the "New user" dialog: the plan's fields shown locked and not sent,
//   the user stored with the plan's limit, expiry and groups; renewed with a plan on the user page
//   (the new expiry and whether usage resets shown first, then stored as shown); a next plan set; a
//   batch of users from a plan;
// - an owner makes a reseller on the admins page (every scope their own, at most one user, one
//   allowed plan); the
//   users table shows each user's owner and filters by owner; a user moved to another owner;
// - the reseller sees only their users, and a create past their quota shows the API's problem
//   naming the quota;
// - axe finds no serious or critical violation on the pages as they are then.
import { expect, test } from "@playwright/test";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

type User = {
  id: string;
  data_limit_bytes: number | null;
  expire_at: string | null;
  group_ids?: string[];
  next_plan_id: string | null;
  owner_admin_id: string | null;
  used_bytes: number;
  device_limit: number | null;
};

let stack: Stack;
let base: string;
const ids: Record<string, string> = {};
const GiB = 2 ** 30;
const DAY = 86_400_000;
const RITA = { username: "rita", password: "reseller password 1" };

test.beforeAll(async () => {
  stack = await startStack({ core: false });
  base = stack.portcullis.baseUrl;
  ids.eu = (await stack.api<{ id: string }>("POST", "/api/groups", { name: "eu" })).id;
  ids.monthly = (
    await stack.api<{ id: string }>("POST", "/api/plans", {
      name: "monthly",
      data_limit_bytes: 50 * GiB,
      data_limit_reset: "month",
      duration_days: 30,
      renew_from: "expiry",
      reset_usage: true,
      device_limit: 2,
      group_ids: [ids.eu],
    })
  ).id;
  ids.weekly = (
    await stack.api<{ id: string }>("POST", "/api/plans", {
      name: "weekly",
      data_limit_bytes: 10 * GiB,
      duration_days: 7,
      renew_from: "now",
    })
  ).id;
  // Owned by nobody, as users made before owners existed or by the CLI are.
  ids.nobody = (await stack.api<{ id: string }>("POST", "/api/users", { name: "Nick Nobody" })).id;
  await stack.api("PATCH", `/api/users/${ids.nobody}/owner`, { owner_admin_id: null });
});
test.afterAll(async () => {
  await stack?.stop();
});

const userOf = (id: string | undefined) => stack.api<User>("GET", `/api/users/${id}`);

test("a user from a plan, renewed with a plan, a next plan", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Users" }).click();
  await page.getByRole("button", { name: "New user" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name" }).fill("Pia Plan");
  await dialog.getByTestId("create-user-plan").click();
  await page.getByRole("option", { name: "monthly" }).click();
  await expect(dialog.getByTestId("create-user-plan-note")).toHaveText("Set by the plan “monthly”.");
  // The plan's fields, shown and locked.
  await expect(dialog.getByTestId("limit-data")).toHaveValue("50");
  await expect(dialog.getByTestId("limit-data")).toHaveAttribute("readonly", "");
  await expect(dialog.getByTestId("limit-expire")).toHaveAttribute("readonly", "");
  await expect(dialog.getByTestId("limit-devices")).toHaveValue("2");
  await expect(dialog.getByTestId("limit-devices")).toHaveAttribute("readonly", "");
  await expect(dialog.getByTestId("create-user-groups")).toHaveAttribute("readonly", "");
  expect(await severeViolations(page, "new user from a plan")).toEqual([]);
  const before = Date.now();
  await dialog.getByRole("button", { name: "Create" }).click();
  await expect(page.getByRole("heading", { name: "Pia Plan", level: 2 })).toBeVisible();
  ids.pia = page.url().split("/").pop() ?? "";
  const created = await userOf(ids.pia);
  expect(created.data_limit_bytes).toBe(50 * GiB);
  expect(created.device_limit).toBe(2);
  expect(created.group_ids).toEqual([ids.eu]);
  const expiry = Date.parse(created.expire_at ?? "");
  expect(expiry).toBeGreaterThanOrEqual(before + 30 * DAY - 60_000);
  expect(expiry).toBeLessThanOrEqual(Date.now() + 30 * DAY + 60_000);

  // Renew with monthly: 30 more days after the current expiry, usage reset; shown before it is done.
  const card = page.getByTestId("plan-card");
  await card.getByTestId("renew-plan").click();
  await page.getByRole("option", { name: "monthly" }).click();
  const expected = new Date(expiry + 30 * DAY).toLocaleString("en", {
    dateStyle: "medium",
    timeStyle: "short",
  });
  await expect(card.getByTestId("renew-preview")).toHaveText(
    `New expiry: ${expected}. Usage starts over at 0.`,
  );
  await card.getByTestId("renew-submit").click();
  await expect(page.getByText(`Renewed: expires ${expected}`)).toBeVisible();
  expect(Date.parse((await userOf(ids.pia)).expire_at ?? "")).toBe(expiry + 30 * DAY);

  // Weekly counts from now and keeps usage.
  await card.getByTestId("renew-plan").click();
  await page.getByRole("option", { name: "weekly" }).click();
  await expect(card.getByTestId("renew-preview")).toContainText("Usage is kept.");

  // The next plan, stored.
  await card.getByTestId("next-plan").click();
  await page.getByRole("option", { name: "weekly" }).click();
  await expect.poll(async () => (await userOf(ids.pia)).next_plan_id).toBe(ids.weekly);
  expect(await severeViolations(page, "user page with a plan")).toEqual([]);

  // A batch from a plan: two users on weekly.
  await page.goto(`${base}/dashboard/users`);
  await page.getByRole("button", { name: "New user" }).click();
  await dialog.getByText("Many users", { exact: true }).click();
  await dialog.getByRole("textbox", { name: "Name prefix" }).fill("batch-");
  await dialog.getByRole("textbox", { name: "Number of users" }).fill("2");
  await dialog.getByTestId("create-user-plan").click();
  await page.getByRole("option", { name: "weekly" }).click();
  await expect(dialog.getByTestId("limit-data")).toHaveValue("10");
  await dialog.getByRole("button", { name: "Create" }).click();
  await expect(page.getByText("2 users created")).toBeVisible();
  const batch = await stack.api<User[]>("GET", "/api/users/search?q=batch-");
  expect(batch.map((u) => u.data_limit_bytes)).toEqual([10 * GiB, 10 * GiB]);
  expect(problems).toEqual([]);
});

test("an owner makes a reseller; owners and the owner filter in the users table; a user moved", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Admins" }).click();
  await page.getByRole("button", { name: "New admin" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Username" }).fill(RITA.username);
  await dialog.getByRole("textbox", { name: "Password" }).fill(RITA.password);
  await dialog.getByRole("button", { name: "Only their own users (reseller)" }).click();
  await dialog.getByRole("textbox", { name: "Most users" }).fill("1");
  await dialog.getByRole("checkbox", { name: "Only some plans" }).check();
  await dialog.getByTestId("allowed-plans").click({ force: true });
  await page.getByRole("option", { name: "weekly" }).click();
  await page.keyboard.press("Escape");
  expect(await severeViolations(page, "new reseller")).toEqual([]);
  await dialog.getByRole("button", { name: "Create" }).click();
  const row = page.locator('[data-testid="admin-row"][data-username="rita"]');
  await expect(row.getByTestId("admin-quotas")).toHaveText("0 / 1 usersOwn users only");
  const admins = await stack.api<
    {
      id: string;
      username: string;
      scopes: Record<string, string>;
      max_users: number;
      allowed_plan_ids: string[] | null;
    }[]
  >("GET", "/api/admins");
  const rita = admins.find((a) => a.username === "rita");
  expect(rita?.max_users).toBe(1);
  expect(rita?.allowed_plan_ids).toEqual([ids.weekly]);
  expect(Object.values(rita?.scopes ?? {})).toEqual(["own", "own", "own", "own", "own"]);
  ids.rita = rita?.id ?? "";

  // The users table: owners, and only nobody's users through the filter.
  await page.getByRole("link", { name: "Users" }).click();
  const userRow = (name: string) => page.getByTestId("user-row").filter({ hasText: name });
  await expect(userRow("Pia Plan").getByTestId("user-owner")).toHaveText("admin");
  await expect(userRow("Nick Nobody").getByTestId("user-owner")).toHaveText("—");
  await page.getByTestId("filter-owner").click();
  await page.getByRole("option", { name: "Nobody" }).click();
  await expect(page.getByTestId("user-row")).toHaveCount(1);
  await expect(page).toHaveURL(/owner=none/);

  // Nick moved to rita on his page: the move fills rita's one place.
  await userRow("Nick Nobody").getByRole("link", { name: "Nick Nobody" }).click();
  await page.getByTestId("user-owner").click();
  await page.getByRole("option", { name: "rita" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Yes" }).click();
  await expect.poll(async () => (await userOf(ids.nobody)).owner_admin_id).toBe(ids.rita);
  expect(problems).toEqual([]);
});

test("the reseller sees only their users and reads the quota's problem", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base, RITA);
  await page.getByRole("link", { name: "Users" }).click();
  await expect(page.getByTestId("user-row")).toHaveCount(1);
  await expect(page.getByTestId("user-row")).toContainText("Nick Nobody");
  await expect(page.getByTestId("filter-owner")).toHaveCount(0);
  // Another admin's user is not found.
  await page.goto(`${base}/dashboard/users/${ids.pia}`);
  await expect(page.getByTestId("error-alert")).toContainText("404");
  // A second user is past max_users 1: the API's problem, naming the quota.
  await page.goto(`${base}/dashboard/users`);
  await page.getByRole("button", { name: "New user" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name" }).fill("Rita Two");
  await dialog.getByRole("button", { name: "Create" }).click();
  await expect(page.getByText("403 Forbidden (quota_exceeded)")).toBeVisible();
  await expect(page.getByTestId("error-detail")).toHaveText(
    "quota max_users exceeded: admin rita may own at most 1 users; this would make 2",
  );
  await expect(dialog).toBeVisible();
  const all = await stack.api<{ total: number }>("GET", "/api/users");
  expect(all.total).toBe(4); // Pia, Nick and the batch of two
  expect(problems).toEqual([]);
});
