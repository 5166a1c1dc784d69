// Steps every browser test shares: sign in through the form, and fail on any CSP violation.
import { expect, type Page } from "@playwright/test";
import { ADMIN } from "./stack.ts";

/** Collects CSP violations and uncaught errors of the page; assert on them at the end. */
export function watchForProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy|Refused to/i.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

export async function signIn(
  page: Page,
  baseUrl: string,
  as: { username: string; password: string } = ADMIN,
): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/`);
  await page.getByRole("textbox", { name: "Username" }).fill(as.username);
  await page.getByRole("textbox", { name: "Password" }).fill(as.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Users", level: 2 })).toBeVisible();
}
