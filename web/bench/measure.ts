// The browser half of `npm run bench:dashboard` (bench/dashboard.ts starts the seeded service and
// runs this): Debian's Chromium against the users page. Every time is the page's own performance
// clock: a MutationObserver stamps the moment the users table says what it shows (data-page,
// data-results-for), so no polling interval is added to a measurement.
// Usage: tsx web/bench/measure.ts <base url> <token> <names file> <loads> <searches> <pages>
// Prints one JSON line: {interactive: ms[], searches: ms[], nextPages: ms[], chromium}.
import { readFileSync } from "node:fs";
import { chromium, type Page } from "@playwright/test";

const [base, token, namesFile, loads = "10", searchCount = "50", pageCount = "50"] = process.argv.slice(2);
if (base === undefined || token === undefined || namesFile === undefined)
  throw new Error("usage: see the header");
const names = readFileSync(namesFile, "utf8").split("\n").filter(Boolean);
let state = 7;
const random = () => {
  state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
  return state / 2_147_483_648;
};

type Stamps = { __shownAt?: number; __lastKeyAt?: number; __observer?: MutationObserver };

/** In the page: stamps (performance.now()) when the users table first shows `attr` = `value`. */
function watchTable(page: Page, attr: "data-page" | "data-results-for", value: string): Promise<void> {
  return page.evaluate(
    ([name, expected]) => {
      const w = window as Window & Stamps;
      // One watcher at a time: the previous one would stamp its own, older state.
      w.__observer?.disconnect();
      w.__shownAt = undefined;
      w.__observer = new MutationObserver(() => {
        const table = document.querySelector('[data-testid="users-table"]');
        if (table?.getAttribute(name) === expected && w.__shownAt === undefined)
          w.__shownAt = performance.now();
      });
      w.__observer.observe(document.body, { subtree: true, attributes: true, childList: true });
    },
    [attr, value] as const,
  );
}

async function shownAt(page: Page): Promise<number> {
  await page.waitForFunction(() => (window as Window & Stamps).__shownAt !== undefined, null, {
    timeout: 30_000,
  });
  return page.evaluate(() => (window as Window & Stamps).__shownAt ?? Number.NaN);
}

// tsx (esbuild with keepNames) wraps functions in a `__name` helper; the functions this file hands to
// the page are serialized without it, so the page gets a no-op one.
const NAME_HELPER = { content: "globalThis.__name = (fn) => fn;" };

const browser = await chromium.launch({
  executablePath: process.env.PORTCULLIS_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
try {
  // 1. Cold loads: a new context each time has an empty HTTP cache.
  const interactive: number[] = [];
  for (let i = 0; i < Number(loads); i++) {
    const context = await browser.newContext();
    await context.addInitScript(NAME_HELPER);
    await context.addInitScript(NAME_HELPER);
    await context.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/users`, { waitUntil: "commit" });
    await page
      .locator('[data-testid="users-table"][data-page="1"] [data-testid="user-row"]')
      .first()
      .waitFor();
    interactive.push(
      await page.evaluate(() => {
        const input = document.querySelector<HTMLInputElement>('[data-testid="user-search"]');
        if (input === null || input.disabled) throw new Error("search box not ready");
        // The users page marks the moment its first rows were committed (0 = navigation start).
        const shown = performance.getEntriesByName("portcullis:users-shown")[0];
        if (shown === undefined) throw new Error("no portcullis:users-shown mark");
        return shown.startTime;
      }),
    );
    await context.close();
  }

  // 2 and 3 in one page, as an operator works.
  const context = await browser.newContext();
  await context.addInitScript(NAME_HELPER);
  await context.addInitScript((t) => sessionStorage.setItem("portcullis.token", t), token);
  const page = await context.newPage();
  await page.goto(`${base}/dashboard/users`);
  await page.locator('[data-testid="users-table"][data-page="1"]').waitFor();
  const search = page.getByTestId("user-search");
  await page.evaluate(() => {
    const w = window as Window & Stamps;
    document
      .querySelector('[data-testid="user-search"]')
      ?.addEventListener("input", () => (w.__lastKeyAt = performance.now()), { capture: true });
  });
  const searches: number[] = [];
  const searchParts: { wait: number; request: number; render: number }[] = [];
  for (let i = 0; i < Number(searchCount); i++) {
    const name = (names[Math.floor(random() * names.length)] ?? "").toLowerCase();
    const length = 4 + Math.floor(random() * 4);
    const start = Math.floor(random() * Math.max(1, name.length - length));
    const query = name.slice(start, start + length).trim();
    await search.fill("");
    await watchTable(page, "data-results-for", query);
    await search.pressSequentially(query, { delay: 60 });
    const shown = await shownAt(page);
    const lastKey = await page.evaluate(() => (window as Window & Stamps).__lastKeyAt ?? Number.NaN);
    searches.push(shown - lastKey);
    // Where the time went: the debounce (last key → request), the request, and the render.
    const request = await page.evaluate((q) => {
      const entries = performance
        .getEntriesByType("resource")
        .map((e) => e as PerformanceResourceTiming)
        .filter((e) => e.name.includes("/api/users/search") && new URL(e.name).searchParams.get("q") === q);
      const last = entries.at(-1);
      return last === undefined ? undefined : { start: last.startTime, end: last.responseEnd };
    }, query);
    if (request !== undefined) {
      searchParts.push({
        wait: request.start - lastKey,
        request: request.end - request.start,
        render: shown - request.end,
      });
    }
  }

  await search.fill("");
  await page.locator('[data-testid="users-table"][data-page="1"]').waitFor();
  const nextPages: number[] = [];
  const next = page.getByRole("button", { name: "Next page" });
  for (let n = 2; n <= Number(pageCount) + 1; n++) {
    await watchTable(page, "data-page", String(n));
    const clickedAt = await next.evaluate((button) => {
      const at = { t: Number.NaN };
      button.addEventListener("click", () => (at.t = performance.now()), { once: true, capture: true });
      (button as HTMLButtonElement).click();
      return at.t;
    });
    nextPages.push((await shownAt(page)) - clickedAt);
    // An operator reads a page before the next click; the prefetch of the next page gets that time.
    await page.waitForTimeout(300);
  }
  await context.close();
  console.log(JSON.stringify({ interactive, searches, searchParts, nextPages, chromium: browser.version() }));
} finally {
  await browser.close();
}
