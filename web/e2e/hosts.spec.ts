// Issue 48 in the dashboard, against a real `portcullis serve` and a real V2Ray core:
// - an owner opens an inbound's hosts on the server page, adds two, reorders them with the keyboard
//   (Alt+↑ on a row: the focus stays on the moved host), drags one back, moves them with the move
//   buttons (the focus goes to the other move button at the ends), edits, disables and deletes one;
//   every change is what the API then lists, and the order is the same after a reload;
// - the headers apps read are set on the subscription settings page and a user's own announcement on
//   the user page; the user's /sub answer carries them.
import { expect, type Page, test } from "@playwright/test";
import { freePort } from "../../test/support/ports.ts";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial", timeout: 360_000 });

type Host = {
  id: string;
  address: string | null;
  remark: string | null;
  is_disabled: boolean;
  sni: string[];
};
type Ids = { serverId: string; inboundId: string; tag: string; userId: string; subscriptionUrl: string };

let stack: Stack;
let base: string;
let ids: Ids;

test.beforeAll(async () => {
  test.setTimeout(480_000); // the service, the starters and a core, on a shared two-core machine at load 30
  stack = await startStack({ core: true });
  base = stack.portcullis.baseUrl;
  const core = stack.core;
  if (core === undefined) throw new Error("no core");
  const cert = await stack.api<{ id: string }>("POST", "/api/certificates", {
    name: "edge-localhost",
    cert_type: "self_signed",
    domain: "localhost",
  });
  const server = await stack.api<{ id: string }>("POST", "/api/servers", {
    name: "frankfurt-1",
    hostname: "127.0.0.1",
    grpc_port: core.apiPort,
    default_certificate_id: cert.id,
  });
  const templates = await stack.api<{ id: string; name: string }[]>("GET", "/api/templates");
  const inbound = await stack.api<{ id: string; tag: string }>("POST", `/api/servers/${server.id}/inbounds`, {
    template_id: templates.find((t) => t.name === "vless-ws-tls")?.id,
    port: await freePort(),
    variable_values: { ws_path: "/edge" },
  });
  const user = await stack.api<{ id: string; subscription_url: string }>("POST", "/api/users", {
    name: "Hossein Hosts",
    data_limit_bytes: 10 * 2 ** 30,
  });
  await stack.api("POST", `/api/servers/${server.id}/inbounds/${inbound.id}/users`, { user_id: user.id });
  ids = {
    serverId: server.id,
    inboundId: inbound.id,
    tag: inbound.tag,
    userId: user.id,
    subscriptionUrl: user.subscription_url,
  };
});
test.afterAll(async () => {
  await stack?.stop();
});

const hostsPath = () => `/api/servers/${ids.serverId}/inbounds/${ids.inboundId}/hosts`;
const storedAddresses = async () => (await stack.api<Host[]>("GET", hostsPath())).map((h) => h.address);

async function openHosts(page: Page): Promise<void> {
  await page.goto(`${base}/dashboard/servers/${ids.serverId}`);
  await expect(page.getByTestId("inbound-row")).toHaveCount(1);
  const toggle = page.getByRole("button", { name: `Hosts of ${ids.tag}` });
  await toggle.click();
  await expect(toggle).toHaveAttribute("aria-expanded", "true");
  await expect(page.getByTestId("inbound-hosts")).toBeVisible();
}

/** The addresses the list shows, top to bottom. */
const shownAddresses = (page: Page) => page.getByTestId("host-row").getByTestId("host-address");

async function addHost(page: Page, fill: (dialog: ReturnType<Page["getByRole"]>) => Promise<void>) {
  await page.getByRole("button", { name: "Add host" }).click();
  const dialog = page.getByRole("dialog", { name: `New host of ${ids.tag}` });
  await fill(dialog);
  await dialog.getByRole("button", { name: "Create" }).click();
  await expect(dialog).toBeHidden();
}

test("an owner adds two hosts and reorders them with Alt+Up, a drag and the move buttons; the order survives a reload", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await openHosts(page);
  await expect(page.getByTestId("hosts-implicit")).toContainText("127.0.0.1:");

  await addHost(page, async (dialog) => {
    await dialog.getByRole("textbox", { name: "Address" }).fill("cdn.example.test");
    await dialog.getByRole("textbox", { name: "Remark" }).fill("{SERVER} CDN · {DATA_LEFT}");
    const sni = dialog.getByLabel("SNI", { exact: true });
    await sni.fill("cdn.example.test");
    await sni.press("Enter");
  });
  await addHost(page, async (dialog) => {
    await dialog.getByRole("textbox", { name: "Address" }).fill("203.0.113.7");
    await dialog.getByRole("textbox", { name: "Port" }).fill("8443");
  });
  await expect(shownAddresses(page)).toHaveText([/^cdn\.example\.test:\d+$/, "203.0.113.7:8443"]);
  expect(await storedAddresses()).toEqual(["cdn.example.test", "203.0.113.7"]);
  expect((await stack.api<Host[]>("GET", hostsPath()))[0]?.sni).toEqual(["cdn.example.test"]);
  // Hovered: a subtle button's hover background keeps its text at 4.5:1 (theme.ts).
  await page.locator("[data-control=edit]").first().hover();
  expect(await severeViolations(page, "server page with hosts")).toEqual([]);

  // Keyboard: Alt+↑ on the second row's grip moves it to the top; the focus follows it.
  await page.getByRole("button", { name: "Reorder host 2" }).focus();
  await page.keyboard.press("Alt+ArrowUp");
  await expect(shownAddresses(page)).toHaveText(["203.0.113.7:8443", /^cdn\.example\.test:/]);
  await expect(page.getByRole("button", { name: "Reorder host 1" })).toBeFocused();
  await expect(page.getByTestId("hosts-said")).toHaveText("203.0.113.7 moved to position 1");
  await expect.poll(storedAddresses).toEqual(["203.0.113.7", "cdn.example.test"]);

  // A drag: the second row dropped on the first moves it to the top.
  await page.getByTestId("host-row").nth(1).dragTo(page.getByTestId("host-row").nth(0));
  await expect(shownAddresses(page)).toHaveText([/^cdn\.example\.test:/, "203.0.113.7:8443"]);
  await expect(page.getByTestId("hosts-said")).toHaveText("cdn.example.test moved to position 1");
  await expect.poll(storedAddresses).toEqual(["cdn.example.test", "203.0.113.7"]);

  // The order is the service's, not the page's: it survives a reload.
  await page.reload();
  await openHosts(page);
  await expect(shownAddresses(page)).toHaveText([/^cdn\.example\.test:/, "203.0.113.7:8443"]);

  // The move buttons: at the top, host 1's own "up" is disabled, so the keyboard goes to its "down";
  // pressed, that one is disabled at the bottom and the keyboard goes to its "up".
  await page.getByRole("button", { name: "Move host 2 up" }).click();
  await expect(shownAddresses(page)).toHaveText(["203.0.113.7:8443", /^cdn\.example\.test:/]);
  await expect(page.getByRole("button", { name: "Move host 1 down" })).toBeFocused();
  await expect.poll(storedAddresses).toEqual(["203.0.113.7", "cdn.example.test"]);
  await page.keyboard.press("Enter");
  await expect(shownAddresses(page)).toHaveText([/^cdn\.example\.test:/, "203.0.113.7:8443"]);
  await expect(page.getByRole("button", { name: "Move host 2 up" })).toBeFocused();
  await expect(page.getByTestId("hosts-said")).toHaveText("203.0.113.7 moved to position 2");
  await expect.poll(storedAddresses).toEqual(["cdn.example.test", "203.0.113.7"]);
  await page.reload();
  await openHosts(page);
  await expect(shownAddresses(page)).toHaveText([/^cdn\.example\.test:/, "203.0.113.7:8443"]);
  expect(problems).toEqual([]);
});

test("an owner edits, disables and deletes a host; a refused host shows the API's reason on its field", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await openHosts(page);

  await page.getByRole("button", { name: "Edit host 2" }).click();
  const dialog = page.getByRole("dialog", { name: `Edit a host of ${ids.tag}` });
  await dialog.getByRole("textbox", { name: "Remark" }).fill("Direct {USERNAME}");
  // A path without its leading slash is refused by the service, on the field.
  await dialog.getByRole("textbox", { name: "Path" }).fill("no-slash");
  await dialog.getByRole("button", { name: "Save" }).click();
  await expect(dialog.getByRole("textbox", { name: "Path" })).toHaveAttribute("aria-invalid", "true");
  await dialog.getByRole("textbox", { name: "Path" }).fill("/direct");
  await dialog.getByRole("button", { name: "Save" }).click();
  await expect(dialog).toBeHidden();
  await expect
    .poll(async () => (await stack.api<Host[]>("GET", hostsPath()))[1]?.remark)
    .toBe("Direct {USERNAME}");

  // The switch from the keyboard (its track covers the input, which a pointer click would be refused on).
  await page.getByRole("switch", { name: "Host 2 enabled" }).focus();
  await page.keyboard.press("Space");
  await expect.poll(async () => (await stack.api<Host[]>("GET", hostsPath()))[1]?.is_disabled).toBe(true);
  await expect(page.getByTestId("host-row").nth(1)).toContainText("disabled");

  await page.getByRole("button", { name: "Delete host 2" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(page.getByTestId("host-row")).toHaveCount(1);
  expect(await storedAddresses()).toEqual(["cdn.example.test"]);
  expect(problems).toEqual([]);
});

test("the headers apps read and a user's own announcement are set in the dashboard and sent by /sub", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.goto(`${base}/dashboard/settings/subscription`);
  await expect(page.getByRole("heading", { name: "Headers apps read" })).toBeVisible();
  await page.getByRole("textbox", { name: "Profile web page URL" }).fill("https://example.test/account");
  await page.getByRole("textbox", { name: "Announcement link" }).fill("https://t.me/example_news");
  await page.getByRole("switch", { name: "Hide the app's server settings" }).focus();
  await page.keyboard.press("Space");
  await page.getByRole("button", { name: "Add header" }).click();
  await page.getByRole("textbox", { name: "Name of header 1" }).fill("X-Plan");
  await page.getByRole("textbox", { name: "Value of header 1" }).fill("{USERNAME}: {DATA_LEFT} left");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("button", { name: "Save" })).toBeDisabled();
  const stored = await stack.api<{
    profile_web_page_url: string | null;
    announce_url: string | null;
    hide_settings: boolean;
    custom_headers: { name: string; value: string }[];
  }>("GET", "/api/subscription-settings");
  expect(stored).toMatchObject({
    profile_web_page_url: "https://example.test/account",
    announce_url: "https://t.me/example_news",
    hide_settings: true,
    custom_headers: [{ name: "X-Plan", value: "{USERNAME}: {DATA_LEFT} left" }],
  });

  await page.goto(`${base}/dashboard/users/${ids.userId}`);
  await page.getByTestId("user-announce").fill("Maintenance on Friday");
  await page.getByTestId("limits-save").click();
  await expect
    .poll(
      async () => (await stack.api<{ announce: string | null }>("GET", `/api/users/${ids.userId}`)).announce,
    )
    .toBe("Maintenance on Friday");

  const answer = await fetch(new URL(ids.subscriptionUrl, base));
  expect(answer.status).toBe(200);
  expect(answer.headers.get("profile-web-page-url")).toBe("https://example.test/account");
  expect(answer.headers.get("announce-url")).toBe("https://t.me/example_news");
  expect(answer.headers.get("hide-settings")).toBe("1");
  expect(answer.headers.get("x-plan")).toBe("Hossein Hosts: 10 GB left");
  expect(answer.headers.get("announce")).toBe(
    `base64:${Buffer.from("Maintenance on Friday").toString("base64")}`,
  );
  expect(problems).toEqual([]);
});
