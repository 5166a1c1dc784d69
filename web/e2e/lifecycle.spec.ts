// The lifecycle in the dashboard (issues 12 and 14), against a real `portcullis serve`:
// - a data limit and an expiry set on the user page's "Limits and expiry" card show as the status
//   badge, the usage bar and the expiry; a refused write shows its detail on its field;
// - the users table filters by status (kept in the URL) and sorts by a column;
// - "Change…" extends the expiry of the selected users and shows how many it changed;
// - axe finds no serious or critical violation on the pages as they are then.
import { expect, test } from "@playwright/test";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;
let base: string;
const ids: Record<string, string> = {};
const DAY = 86_400_000;
const SUPPORT = { username: "sue", password: "support password 2" };

test.beforeAll(async () => {
  stack = await startStack({ core: false });
  base = stack.portcullis.baseUrl;
  const seed: [string, Record<string, unknown>][] = [
    ["Lena Limits", {}],
    ["Soon Sam", { expire_at: new Date(Date.now() + 2 * DAY).toISOString(), data_limit_bytes: 5 * 2 ** 30 }],
    ["Later Lou", { expire_at: new Date(Date.now() + 90 * DAY).toISOString() }],
    ["Gone Gil", { expire_at: new Date(Date.now() - 3 * DAY).toISOString() }],
    ["Gone Greta", { expire_at: new Date(Date.now() - 10 * DAY).toISOString() }],
    ["Off Otto", { status: "disabled" }],
  ];
  for (const [name, body] of seed) {
    ids[name] = (await stack.api<{ id: string }>("POST", "/api/users", { name, ...body })).id;
  }
  await stack.api("POST", "/api/admins", { ...SUPPORT, role: "support" });
});
test.afterAll(async () => {
  await stack?.stop();
});

test("limits and expiry on the user page, the badge, filter by status, a bulk extend with its count", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);

  // The user page: a 5 GB limit and an expiry yesterday → expired at once.
  await page.goto(`${base}/dashboard/users/${ids["Lena Limits"]}`);
  const card = page.getByTestId("limits-card");
  await expect(card.getByTestId("user-status")).toHaveAttribute("data-status", "active");
  await card.getByRole("textbox", { name: "Data limit" }).fill("5");
  const yesterday = new Date(Date.now() - DAY);
  const pad = (n: number) => String(n).padStart(2, "0");
  const local = `${yesterday.getFullYear()}-${pad(yesterday.getMonth() + 1)}-${pad(yesterday.getDate())}T12:00`;
  await card.getByLabel("Expiry", { exact: true }).fill(local);
  await card.getByTestId("limits-save").click();
  await expect(card.getByTestId("user-status")).toHaveAttribute("data-status", "expired");
  await expect(card.getByTestId("user-status")).toHaveText("Expired");
  await expect(card.getByTestId("user-usage")).toContainText("0 B / 5.00 GiB");
  await expect(card.getByTestId("user-expiry")).toHaveAttribute("data-state", "past");
  const stored = await stack.api<{ data_limit_bytes: number; expire_at: string; status: string }>(
    "GET",
    `/api/users/${ids["Lena Limits"]}`,
  );
  expect(stored.data_limit_bytes).toBe(5 * 2 ** 30);
  expect(stored.status).toBe("expired");
  expect(Date.parse(stored.expire_at)).toBe(new Date(local).getTime());

  // A refused write: on hold without a duration → the API's detail on that field.
  await card.getByRole("combobox", { name: "Status" }).click();
  await page.getByRole("option", { name: "On hold" }).click();
  await card.getByTestId("limits-save").click();
  await expect(card.getByText("required when status is on_hold")).toBeVisible();
  expect(await severeViolations(page, "user page with limits")).toEqual([]);

  // The table: the badge, then only the expired users through the status filter, in the URL.
  await page.goto(`${base}/dashboard/users`);
  await expect(page.getByTestId("user-row")).toHaveCount(6);
  const row = (name: string) => page.getByTestId("user-row").filter({ hasText: name });
  await expect(row("Off Otto").getByTestId("user-status")).toHaveText("Disabled");
  await expect(row("Soon Sam").getByTestId("user-expiry")).toHaveAttribute("data-state", "soon");
  await expect(row("Soon Sam").getByTestId("user-usage")).toContainText("5.00 GiB");
  await page.getByTestId("filter-status").click();
  await page.getByRole("option", { name: "Expired" }).click();
  await page.keyboard.press("Escape");
  await expect(page.getByTestId("user-row")).toHaveCount(3);
  await expect(page).toHaveURL(/status=expired/);
  await expect(page.getByTestId("users-summary")).toHaveText("3 users match");
  // Sorted by expiry, soonest first: Greta (10 days ago), Lena (yesterday) … by column header.
  await page.getByTestId("sort-expire_at").click();
  await expect(page).toHaveURL(/sort=expire_at/);
  await expect(page.getByTestId("user-row").first()).toContainText("Gone Greta");
  expect(await severeViolations(page, "users filtered")).toEqual([]);

  // The filter survives a reload (it is in the URL).
  await page.reload();
  await expect(page.getByTestId("user-row")).toHaveCount(3);

  // Change… → extend expiry by 30 days over the three selected: confirmed, then the count.
  await page.getByRole("checkbox", { name: "Select all on this page" }).check();
  await page.getByTestId("bulk-change").click();
  const dialog = page.getByRole("dialog");
  await expect(dialog.getByRole("combobox", { name: "Action" })).toHaveValue("Extend expiry");
  await dialog.getByRole("textbox", { name: "Days" }).fill("30");
  await dialog.getByTestId("change-apply").click();
  await expect(dialog.getByText("Extend expiry for 3 users?")).toBeVisible();
  await dialog.getByTestId("change-confirm").click();
  await expect(dialog.getByTestId("change-result")).toHaveText("Changed 3 of 3 users.");
  expect(await severeViolations(page, "change dialog")).toEqual([]);
  await dialog.getByRole("button", { name: "Close" }).first().click();
  // Active again (counted from now), so no longer expired: the filtered table empties.
  await expect(page.getByTestId("user-row")).toHaveCount(0);
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page.getByTestId("user-row")).toHaveCount(6);
  await expect(row("Gone Gil").getByTestId("user-status")).toHaveText("Active");
  await expect(row("Gone Gil").getByTestId("user-expiry")).toHaveAttribute("data-state", "later");
  expect(problems).toEqual([]);
});

test("support changes users through Change… with the two actions their role may run", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base, SUPPORT);
  await page.getByTestId("user-row").filter({ hasText: "Off Otto" }).getByRole("checkbox").check();
  await page.getByTestId("bulk-change").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("combobox", { name: "Action" }).click();
  await expect(page.getByRole("option")).toHaveText(["Extend expiry", "Reset usage"]);
  await page.getByRole("option", { name: "Reset usage" }).click();
  await dialog.getByTestId("change-apply").click();
  await dialog.getByTestId("change-confirm").click();
  await expect(dialog.getByTestId("change-result")).toHaveText("Changed 1 of 1 user."); // the plural follows the count
  // Their user page's Limits card is read-only: no enable, disable or save.
  await page.goto(`${base}/dashboard/users/${ids["Off Otto"]}`);
  const card = page.getByTestId("limits-card");
  await expect(card.getByTestId("user-status")).toHaveText("Disabled");
  await expect(card.getByRole("button")).toHaveCount(0);
  expect(problems).toEqual([]);
});
