// Steps every browser test shares: sign in through the form, fail on any CSP violation, axe, and the
// right-to-left check of numbers with units.
import AxeBuilder from "@axe-core/playwright";
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
  // A role that reads servers lands on the fleet's overview, the others on the users.
  await expect(page.getByRole("heading", { name: /^(Overview|Users)$/, level: 2 })).toBeVisible();
}

/**
 * axe (WCAG 2.1 A and AA): the serious and critical violations on the page as it is now, once no
 * notification is fading in or out (axe measures a fading toast's text at its blended colour: a
 * toast of the step before, leaving, once failed colour contrast at 1.28:1).
 */
export async function severeViolations(page: Page, name: string): Promise<string[]> {
  await page.waitForFunction(() =>
    [...document.querySelectorAll(".mantine-Notification-root")].every((toast) => {
      for (let e: Element | null = toast; e !== null; e = e.parentElement) {
        if (getComputedStyle(e).opacity !== "1") return false;
      }
      return true;
    }),
  );
  const results = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${name}: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.map((n) => `${n.target.join(" ")}: ${n.any[0]?.message ?? ""}`).join(", ")}`,
    );
}

/**
 * Every text in the page with a number followed by a Latin unit (B, KiB … PiB, ms, s, %, d, h, m):
 * the ones outside any isolate (<bdi>, an element with its own dir, or in plain text Unicode's isolate
 * marks: LRI, RLI or FSI … PDI, as translations that are plain strings use them) are listed; a
 * right-to-left page would move their unit to the wrong side. A unit followed by a hyphen is not one:
 * a UUID's first group (2048211d-…) is an identifier, which the pages show in their own dir="ltr".
 */
export function unitsOutsideIsolates(page: Page): Promise<{ outside: string[]; isolated: number }> {
  return page.evaluate(() => {
    const UNIT = /(?<![\w:.-])\d[\d.,]*\s?(?:B|KiB|MiB|GiB|TiB|PiB|ms|s|%|d|h|m)(?![\w-])/;
    const outside: string[] = [];
    let isolated = 0;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      const text = node.textContent ?? "";
      const parent = node.parentElement;
      if (parent === null || !UNIT.test(text)) continue;
      if (parent.closest("script, style, code, pre, textarea")) continue;
      // The text with its isolated runs (U+2066/U+2067/U+2068 … U+2069) taken out.
      const bare = text.replace(/[\u2066-\u2068][^\u2069]*\u2069/g, " ");
      if (parent.closest("bdi, [dir]:not(html)") !== null || !UNIT.test(bare)) isolated++;
      else outside.push(text.trim());
    }
    return { outside, isolated };
  });
}
