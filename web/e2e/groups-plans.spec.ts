// Issue 49 in the dashboard, against a real `portcullis serve` and a real V2Ray core:
// - groups: a new group from the groups page, every inbound of a server added in one step, a member
//   added by search and the rest by status; the members hold the group's inbounds on the core (probed
//   through its API); an inbound removed is revoked on the core; a member removed; renamed; counts;
// - plans: a plan with every term (device limit too) created and edited on the plans page, then
//   stored as shown;
// - axe finds no serious or critical violation on the pages as they are then.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, type Page, test } from "@playwright/test";
import { freePort } from "../../test/support/ports.ts";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial", timeout: 360_000 });

type Access = { server_inbound_id: string; proxy_user_id: string; sync_state: string; uri?: string };
type Inbound = { id: string; tag: string };

let stack: Stack;
let base: string;
let serverId: string;
let inbounds: Inbound[];
const users: Record<string, string> = {};
const GiB = 2 ** 30;

test.beforeAll(async () => {
  test.setTimeout(480_000); // the service, the starters and a core, on a shared two-core machine
  stack = await startStack({ core: true });
  base = stack.portcullis.baseUrl;
  const core = stack.core;
  if (core === undefined) throw new Error("no core");
  const cert = await stack.api<{ id: string }>("POST", "/api/certificates", {
    name: "edge-localhost",
    cert_type: "self_signed",
    domain: "localhost",
  });
  serverId = (
    await stack.api<{ id: string }>("POST", "/api/servers", {
      name: "frankfurt-1",
      hostname: "127.0.0.1",
      grpc_port: core.apiPort,
      default_certificate_id: cert.id,
    })
  ).id;
  const templates = await stack.api<{ id: string; name: string }[]>("GET", "/api/templates");
  const template_id = templates.find((t) => t.name === "vless-ws-tls")?.id;
  inbounds = [];
  for (const path of ["/one", "/two"]) {
    inbounds.push(
      await stack.api<Inbound>("POST", `/api/servers/${serverId}/inbounds`, {
        template_id,
        port: await freePort(),
        variable_values: { ws_path: path },
      }),
    );
  }
  for (const [name, body] of [
    ["Ana Group", {}],
    ["Bo Group", {}],
    ["Cy Off", { status: "disabled" }],
  ] as const) {
    users[name] = (await stack.api<{ id: string }>("POST", "/api/users", { name, ...body })).id;
  }
});
test.afterAll(async () => {
  await stack?.stop();
});

const accessOf = (name: string) =>
  stack.api<Access[]>("GET", `/api/users/${users[name]}/access?include_uris=true`);

const PROBE = fileURLToPath(new URL("../../test/support/probe-core-cli.ts", import.meta.url));

/** Which of the user's grants the core really holds (the vless UUID is in the share link). */
async function onCore(name: string): Promise<string[]> {
  const grants = await accessOf(name);
  const tagOf = (id: string) => inbounds.find((i) => i.id === id)?.tag ?? "";
  const probe = grants.map((g) => ({
    tag: tagOf(g.server_inbound_id),
    protocol: "vless",
    email: g.proxy_user_id,
    credential: /^vless:\/\/([^@]+)@/.exec(g.uri ?? "")?.[1] ?? "",
  }));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", PROBE, `127.0.0.1:${stack.core?.apiPort}`, JSON.stringify(probe)],
    { timeout: 30_000 },
  );
  const { present } = JSON.parse(stdout) as { present: string[] };
  return grants.filter((g) => present.includes(g.proxy_user_id)).map((g) => tagOf(g.server_inbound_id));
}

async function pick(page: Page, testId: string, option: string): Promise<void> {
  // A MultiSelect's pills field lies over its input: the click lands on the field, which opens it.
  await page.getByTestId(testId).click({ force: true });
  await page.getByRole("option", { name: option }).click();
}

test("a group: every inbound of a server in one step, members by search and by status, on the core", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Groups" }).click();
  await expect(page.getByTestId("empty-state")).toHaveText("No groups yet.");
  await page.getByRole("button", { name: "New group" }).click();
  await page.getByRole("dialog").getByRole("textbox", { name: "Name" }).fill("fleet");
  await page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
  await expect(page.getByRole("heading", { name: "fleet", level: 2 })).toBeVisible();
  await expect(page.getByTestId("group-counts")).toHaveText("0 inbounds · 0 members");

  // Every inbound of frankfurt-1, in one step.
  await pick(page, "group-server-picker", "frankfurt-1");
  await expect(page.getByTestId("group-add-server")).toHaveText("Add all 2");
  await page.getByTestId("group-add-server").click();
  await expect(page.getByTestId("group-inbound")).toHaveCount(2);
  await expect(page.getByTestId("group-counts")).toHaveText("2 inbounds · 0 members");

  // A member by search: granted both inbounds, on the core.
  const picker = page.getByTestId("group-member-picker");
  await picker.fill("Ana");
  await page.getByRole("option", { name: "Ana Group" }).click();
  await expect(page.getByText("1 of 1 changed. Granted 2, revoked 0 on the cores.")).toBeVisible();
  await expect(page.getByTestId("group-member")).toHaveCount(1);
  await expect
    .poll(async () => (await onCore("Ana Group")).sort())
    .toEqual(inbounds.map((i) => i.tag).sort());

  // Every active user: Bo joins, Ana already is a member, Cy (disabled) is not matched.
  await pick(page, "group-member-filter", "Active");
  await page.keyboard.press("Escape");
  await page.getByTestId("group-add-matching").click();
  await expect(page.getByText("1 of 2 changed. Granted 2, revoked 0 on the cores.")).toBeVisible();
  await expect(page.getByTestId("group-member")).toHaveCount(2);
  await expect(page.getByTestId("group-counts")).toHaveText("2 inbounds · 2 members");
  expect((await accessOf("Cy Off")).length).toBe(0);
  await expect.poll(async () => (await onCore("Bo Group")).length).toBe(2);
  expect(await severeViolations(page, "group page")).toEqual([]);

  // One inbound out of the group: revoked from both members, on the core too.
  const second = inbounds[1] as Inbound;
  await page
    .getByTestId("group-inbound")
    .filter({ hasText: second.tag })
    .getByRole("button", { name: "Remove from the group" })
    .click();
  await page.getByRole("dialog").getByRole("button", { name: "Yes" }).click();
  await expect(page.getByText("Granted 0, revoked 2 on the cores.")).toBeVisible();
  await expect(page.getByTestId("group-inbound")).toHaveCount(1);
  await expect.poll(() => onCore("Ana Group")).toEqual([inbounds[0]?.tag]);
  expect((await accessOf("Bo Group")).map((a) => a.server_inbound_id)).toEqual([inbounds[0]?.id]);

  // Bo out of the group: their grant goes with it.
  await page.getByRole("button", { name: "Remove Bo Group from the group" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Yes" }).click();
  await expect(page.getByTestId("group-member")).toHaveCount(1);
  await expect.poll(async () => (await accessOf("Bo Group")).length).toBe(0);

  // Renamed; the list shows the counts.
  await page.getByRole("button", { name: "Rename" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name" }).fill("fleet-eu");
  await dialog.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("heading", { name: "fleet-eu", level: 2 })).toBeVisible();
  await page.getByTestId("back-link").click();
  const row = page.getByTestId("group-row");
  await expect(row).toHaveCount(1);
  await expect(row.getByTestId("group-inbound-count")).toHaveText("1");
  await expect(row.getByTestId("group-member-count")).toHaveText("1");
  expect(await severeViolations(page, "groups page")).toEqual([]);
  expect(problems).toEqual([]);
});

test("a plan with every term, created and edited on the plans page", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.getByRole("link", { name: "Plans" }).click();
  await page.getByRole("button", { name: "New plan" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name" }).fill("monthly");
  await dialog.getByTestId("plan-data").fill("50");
  await pick(page, "plan-reset", "Every month (the 1st)");
  await dialog.getByTestId("plan-days").fill("30");
  await dialog.getByText("now", { exact: true }).click();
  await expect(dialog.getByRole("radio", { name: "now" })).toBeChecked();
  await dialog.getByRole("checkbox", { name: "A renewal resets usage" }).check();
  await pick(page, "plan-groups", "fleet-eu");
  await page.keyboard.press("Escape");
  await dialog.getByTestId("plan-save").click();
  await expect(dialog).toHaveCount(0);
  const row = page.getByTestId("plan-row").filter({ hasText: "monthly" });
  await expect(row.getByTestId("plan-limit")).toHaveText("50.0 GiB · Every month (the 1st)");
  await expect(row.getByTestId("plan-duration")).toHaveText("30 days");
  await expect(row.getByTestId("plan-renewal")).toHaveText("nowresets usage");
  await expect(row).toContainText("fleet-eu");
  const [stored] = await stack.api<Record<string, unknown>[]>("GET", "/api/plans");
  expect(stored).toMatchObject({
    name: "monthly",
    data_limit_bytes: 50 * GiB,
    data_limit_reset: "month",
    duration_days: 30,
    renew_from: "now",
    reset_usage: true,
    start_on_hold: false,
    ip_limit: null,
    device_limit: null,
  });
  expect(stored?.group_ids).toHaveLength(1);

  // Edited: on hold, at most 3 days, 2 IPs.
  await row.getByRole("button", { name: "monthly", exact: true }).click();
  await dialog.getByRole("checkbox", { name: "Start on hold" }).check();
  await dialog.getByRole("textbox", { name: "Start anyway after (days)" }).fill("3");
  await dialog.getByRole("textbox", { name: "IP limit" }).fill("2");
  await dialog.getByRole("textbox", { name: "Device limit" }).fill("3");
  expect(await severeViolations(page, "plan dialog")).toEqual([]);
  await dialog.getByTestId("plan-save").click();
  await expect(dialog).toHaveCount(0);
  await expect(row.getByTestId("plan-duration")).toHaveText("30 daysOn hold, at most 3 days");
  await expect(row.getByTestId("plan-limit")).toContainText("2 IPs");
  await expect(row.getByTestId("plan-limit")).toContainText("3 devices");
  const [edited] = await stack.api<Record<string, unknown>[]>("GET", "/api/plans");
  expect(edited).toMatchObject({
    start_on_hold: true,
    on_hold_timeout_days: 3,
    ip_limit: 2,
    duration_days: 30,
  });
  expect(await severeViolations(page, "plans page")).toEqual([]);
  expect(problems).toEqual([]);
});
