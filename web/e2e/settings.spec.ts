// The subscription settings page against a real `portcullis serve`:
// - an owner changes the public URL and the User-Agent rules (a new rule moved to the top with the
//   keyboard, one removed), saves, reloads: it is stored, the page shows it, users' URLs follow;
// - invalid base documents are refused by the service (422) and each error is shown at its path and
//   line in the document; a field error lands on its field; nothing is stored;
// - a viewer finds the page under Administration and reads it: nothing to change, nothing sent.
import { expect, type Page, test } from "@playwright/test";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { ADMIN, type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

const VIEWER = { username: "vera", password: "viewer password 1" };
type Settings = {
  public_url: string | null;
  placeholder_disabled: string;
  ua_rules: { pattern: string; format: string }[];
  mihomo_base: string;
  singbox_base: unknown;
};

let stack: Stack;
let base: string;

test.beforeAll(async () => {
  stack = await startStack({ core: false });
  base = stack.portcullis.baseUrl;
  await stack.api("POST", "/api/admins", { ...VIEWER, role: "viewer" });
});
test.afterAll(async () => {
  await stack?.stop();
});

async function openSettings(page: Page): Promise<void> {
  const nav = page.getByRole("navigation", { name: "Main navigation" });
  await nav.getByRole("link", { name: "Subscription settings" }).click();
  // Off the link again: axe judges the page, not Mantine's hover shade of the active link.
  await page.mouse.move(640, 10);
  await expect(page.getByRole("heading", { name: "Subscription settings", level: 2 })).toBeVisible();
  await expect(page.getByTestId("ua-rule")).toHaveCount(5);
}

/** The 1-based line of the first occurrence of `needle` in `text`. */
const lineOf = (text: string, needle: string) => text.slice(0, text.indexOf(needle)).split("\n").length;

test("an owner changes the public URL and the User-Agent rules; they are stored and shown after a reload", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  const before = await stack.api<Settings>("GET", "/api/subscription-settings");
  await signIn(page, base, ADMIN);
  await openSettings(page);
  expect(await severeViolations(page, "subscription settings")).toEqual([]);
  const save = page.getByRole("button", { name: "Save" });
  await expect(save).toBeDisabled();

  await page.getByRole("textbox", { name: "Public URL" }).fill("https://sub.example.test");
  await page.getByRole("textbox", { name: "Disabled", exact: true }).fill("⛔ paused by support");
  // A new rule at the end, moved to the top with the keyboard: the focus follows the moved rule.
  await page.getByRole("button", { name: "Add rule" }).click();
  await page.getByRole("textbox", { name: "Pattern of rule 6" }).fill("^my-client/");
  await page.getByRole("combobox", { name: "Format of rule 6" }).click();
  await page.getByRole("option", { name: "links", exact: true }).click();
  await page.getByRole("button", { name: "Move rule 6 up" }).focus();
  for (let n = 6; n > 1; n--) {
    await expect(page.getByRole("button", { name: `Move rule ${n} up` })).toBeFocused();
    await page.keyboard.press("Enter");
  }
  await expect(page.getByRole("textbox", { name: "Pattern of rule 1" })).toHaveValue("^my-client/");
  await expect(page.getByRole("button", { name: "Move rule 1 up" })).toBeDisabled();
  // The last default rule (Happ, Streisand, …) goes.
  await page.getByRole("button", { name: "Remove rule 6" }).click();
  await expect(page.getByTestId("ua-rule")).toHaveCount(5);
  // The rules on screen decide, before saving.
  await page
    .getByRole("textbox", { name: "Try a User-Agent against the rules on screen" })
    .fill("My-Client/2.1");
  await expect(page.getByTestId("ua-try-result")).toHaveText("rule 1 → links");

  // Only what changed is sent.
  const sent = page.waitForRequest(
    (r) => r.method() === "PUT" && r.url().endsWith("/api/subscription-settings"),
  );
  await save.click();
  expect(Object.keys((await sent).postDataJSON() as object).sort()).toEqual([
    "placeholder_disabled",
    "public_url",
    "ua_rules",
  ]);
  await expect(page.getByText("Saved", { exact: true })).toBeVisible();
  await expect(save).toBeDisabled();

  const stored = await stack.api<Settings>("GET", "/api/subscription-settings");
  expect(stored.public_url).toBe("https://sub.example.test");
  expect(stored.placeholder_disabled).toBe("⛔ paused by support");
  expect(stored.ua_rules).toEqual([
    { pattern: "^my-client/", format: "links" },
    ...before.ua_rules.slice(0, 4),
  ]);
  expect(stored.mihomo_base).toBe(before.mihomo_base);
  const user = await stack.api<{ subscription_url: string }>("POST", "/api/users", { name: "Pat Public" });
  expect(user.subscription_url).toMatch(/^https:\/\/sub\.example\.test\/sub\//);

  await page.reload();
  await expect(page.getByTestId("ua-rule")).toHaveCount(5);
  await expect(page.getByRole("textbox", { name: "Public URL" })).toHaveValue("https://sub.example.test");
  await expect(page.getByRole("textbox", { name: "Disabled", exact: true })).toHaveValue(
    "⛔ paused by support",
  );
  await expect(page.getByRole("textbox", { name: "Pattern of rule 1" })).toHaveValue("^my-client/");
  await expect(page.getByRole("combobox", { name: "Format of rule 1" })).toHaveValue("links");

  // Every rule removed: the page says what that means; discarding brings them back.
  for (let n = 5; n >= 1; n--) await page.getByRole("button", { name: `Remove rule ${n}` }).click();
  await expect(page.getByTestId("ua-rules-empty")).toHaveText("No rules: every app gets base64.");
  await page.getByRole("button", { name: "Discard changes" }).click();
  await expect(page.getByTestId("ua-rule")).toHaveCount(5);
  expect(problems).toEqual([]);
});

test("invalid base documents are shown at their path and line; a bad URL on its field; nothing is stored", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  const before = await stack.api<Settings>("GET", "/api/subscription-settings");
  await signIn(page, base, ADMIN);
  await openSettings(page);
  const mihomo = page.getByTestId("mihomo-base");
  const singbox = page.getByTestId("singbox-base");
  // A group naming a proxy that does not exist, in each document, and a public URL that is not one.
  const mihomoText = (await mihomo.inputValue()).replace("      - Auto\n", "      - Nowhere\n");
  const singboxText = (await singbox.inputValue()).replace('"Auto",', '"Nowhere",');
  expect(mihomoText).toContain("- Nowhere");
  expect(singboxText).toContain('"Nowhere"');
  await mihomo.fill(mihomoText);
  await singbox.fill(singboxText);
  await page.getByRole("textbox", { name: "Public URL" }).fill("sub.example.test");
  await page.getByRole("button", { name: "Save" }).click();

  const mihomoErrors = page.getByTestId("mihomo-base-errors");
  await expect(mihomoErrors).toContainText(
    `line ${lineOf(mihomoText, "- Nowhere")} · mihomo_base.proxy-groups.0.proxies.0 names no proxy or group: "Nowhere"`,
  );
  const singboxErrors = page.getByTestId("singbox-base-errors");
  await expect(singboxErrors).toContainText(
    `line ${lineOf(singboxText, '"Nowhere"')} · singbox_base.outbounds.0.outbounds.0 names no outbound: "Nowhere"`,
  );
  // A click on the error selects its line in the document.
  await singboxErrors.getByRole("button", { name: /singbox_base\.outbounds\.0\.outbounds\.0/ }).click();
  await expect(singbox).toBeFocused();
  expect(
    await singbox.evaluate((el: HTMLTextAreaElement) => el.value.slice(el.selectionStart, el.selectionEnd)),
  ).toBe('"Nowhere",');
  // The URL's error is on its field; the service's detail is on the page.
  const publicUrl = page.getByRole("textbox", { name: "Public URL" });
  await expect(publicUrl).toHaveAttribute("aria-invalid", "true");
  await expect(publicUrl).toHaveAccessibleDescription(/must be an http\(s\) URL/);
  await expect(page.getByTestId("save-error")).toContainText("the settings are not valid:");
  expect(await severeViolations(page, "subscription settings with errors")).toEqual([]);

  const stored = await stack.api<Settings>("GET", "/api/subscription-settings");
  expect(stored).toEqual(before);

  // Editing a document clears its errors (they belong to the text that was sent).
  await singbox.fill(singboxText.replace('"Nowhere",', '"Auto",'));
  await expect(singboxErrors).toHaveCount(0);
  await expect(mihomoErrors).toBeVisible();
  // Text that does not parse is refused before it is sent, with its line.
  await singbox.fill('{\n  "log": {\n}');
  await expect(page.getByText(/^Not valid JSON \(line 3\)/)).toBeVisible();
  await expect(page.getByRole("button", { name: "Save" })).toBeDisabled();
  expect(problems).toEqual([]);
});

test("a viewer finds the settings under Administration and can only read them", async ({ page }) => {
  const problems = watchForProblems(page);
  const writes: string[] = [];
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (request.method() !== "GET" && url.pathname.startsWith("/api/") && url.pathname !== "/api/auth/token")
      writes.push(`${request.method()} ${url.pathname}`);
  });
  await signIn(page, base, VIEWER);
  await expect(page.getByTestId("signed-in-as")).toContainText("viewer");
  await openSettings(page);
  await expect(page.getByTestId("settings-read-only")).toBeVisible();
  await expect(page.getByRole("textbox", { name: "Public URL" })).toHaveValue("https://sub.example.test");
  const main = page.getByRole("main");
  await expect(
    main.getByRole("button", { name: /^(Save|Discard changes|Add rule|Move rule.*|Remove rule.*)$/ }),
  ).toHaveCount(0);
  for (const name of [
    "Public URL",
    "Support URL",
    "Pattern of rule 1",
    "mihomo base (YAML)",
    "sing-box base (JSON)",
  ])
    await expect(main.getByRole("textbox", { name, exact: true }), name).toHaveAttribute("readonly", "");
  await expect(main.getByRole("switch", { name: "Answer /sub/{user_id} too" })).toBeDisabled();
  expect(await severeViolations(page, "subscription settings (viewer)")).toEqual([]);
  // The service refuses the viewer's write anyway.
  const status = await page.evaluate(async () => {
    const response = await fetch("/api/subscription-settings", {
      method: "PUT",
      headers: {
        authorization: `Bearer ${sessionStorage.getItem("portcullis.token") ?? ""}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ public_url: null }),
    });
    return response.status;
  });
  expect(status).toBe(403);
  expect(writes).toEqual(["PUT /api/subscription-settings"]);
  expect(problems).toEqual([]);
});
