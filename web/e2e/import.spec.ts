// The Import page (issue 51) against a real `portcullis serve`: an owner uploads a Marzban SQLite
// fixture (test/support/peer-fixtures.ts), runs the dry run (its report shows the fixture's users as
// "would create", and nothing is written), then imports: the report shows them created and the
// service has them. Users only (no server chosen), so no core is needed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { writeMarzbanSqlite } from "../../test/support/peer-fixtures.ts";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { ADMIN, type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

const N = 60;
let stack: Stack;
let dir: string;
let dbPath: string;

test.beforeAll(async () => {
  stack = await startStack({ core: false });
  dir = mkdtempSync(join(tmpdir(), "portcullis-import-e2e-"));
  dbPath = join(dir, "db.sqlite3");
  writeMarzbanSqlite(dbPath, N);
});
test.afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const usersTotal = async () => (await stack.api<{ total: number }>("GET", "/api/users?per_page=1")).total;

test("an owner uploads a Marzban database, reads the dry run's report, then imports it", async ({ page }) => {
  const problems = watchForProblems(page);
  const before = await usersTotal();
  await signIn(page, stack.portcullis.baseUrl, ADMIN);
  await page
    .getByRole("navigation", { name: "Main navigation" })
    .getByRole("link", { name: "Import" })
    .click();
  await page.mouse.move(640, 10);
  await expect(page.getByRole("heading", { name: "Import", level: 2 })).toBeVisible();
  expect(await severeViolations(page, "import")).toEqual([]);

  await page.locator('input[type="file"]').setInputFiles(dbPath);
  await page.getByRole("button", { name: "Dry run" }).click();
  const job = page.getByTestId("import-job");
  await expect(job).toContainText("Dry run of marzban · done");
  const users = page.getByTestId("import-row-users");
  await expect(users.getByRole("cell")).toHaveText(["Users", String(N), String(N), "0", "0"]);
  await expect(job).toContainText(`${N} of ${N} users`);
  expect(await usersTotal()).toBe(before);

  await page.getByRole("button", { name: "Import", exact: true }).click();
  await expect(job).toContainText("Import of marzban · done");
  await expect(users.getByRole("cell")).toHaveText(["Users", String(N), String(N), "0", "0"]);
  await expect(page.getByRole("columnheader", { name: "Created" })).toBeVisible();
  expect(await usersTotal()).toBe(before + N);
  expect(await severeViolations(page, "import report")).toEqual([]);
  expect(problems).toEqual([]);
});
