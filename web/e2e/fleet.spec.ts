// The fleet in the dashboard (issue 47), against a real `portcullis serve`, a real V2Ray core reached
// directly, and a node agent running a second real V2Ray core:
// - a node server registered in the browser; its page makes the join command, which is run as shown
//   (through a POSIX shell) and joins the host; the agent started, the page shows its report and the
//   core's log lines read through it;
// - the base document: a refused one shows the API's error at its path and line and stores nothing;
//   an accepted one is stored; reset to the default;
// - sign-in lands on the overview: every server with its connection, agent and core, the offline one
//   as a problem, users by status as the API counts them; usable on a phone; axe; Persian isolates.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { expect, test } from "@playwright/test";
import { freePort } from "../../test/support/ports.ts";
import { tempDir } from "../../test/support/v2ray.ts";
import { severeViolations, signIn, unitsOutsideIsolates, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial", timeout: 360_000 });

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

type Overview = {
  servers: { id: string; name: string; status: string; connection: string }[];
  users: { total: number; by_status: Record<string, number> };
  online: { users: number; addresses: number };
};

let stack: Stack;
let base: string;
let nodeServerId = "";
let agentPort = 0;

/**
 * `portcullis node run` on the joined directory, with the real v2ray, in a process group of its own:
 * the cleanup ends the agent and its core together (SIGTERM, then SIGKILL if it lingers).
 */
function startAgent(dir: string): void {
  const agent = spawn(
    process.execPath,
    ["--import", "tsx", "src/main.ts", "node", "run", "--dir", dir, "--host", "127.0.0.1"],
    {
      cwd: ROOT,
      detached: true,
      stdio: "ignore",
      env: { ...process.env, PORTCULLIS_NODE_PORT: String(agentPort), PORTCULLIS_NODE_CORE: "v2ray" },
    },
  );
  const pid = agent.pid;
  if (pid === undefined) throw new Error("the agent did not start");
  stack.cleanup.add(async () => {
    if (agent.exitCode !== null || agent.signalCode !== null) return;
    process.kill(-pid, "SIGTERM");
    const exited = once(agent, "exit");
    const late = setTimeout(() => process.kill(-pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(late);
  });
}

test.beforeAll(async () => {
  test.setTimeout(480_000); // the service, the starters and a core, on a shared two-core machine
  stack = await startStack({ core: true });
  base = stack.portcullis.baseUrl;
  const core = stack.core;
  if (core === undefined) throw new Error("no core");
  // The agent started below is stopped by the stack's cleanup (registered there), before the service.
  await stack.api("POST", "/api/servers", {
    name: "direct-1",
    hostname: "127.0.0.1",
    grpc_port: core.apiPort,
  });
  // Nothing listens there: the reconciler finds it offline.
  await stack.api("POST", "/api/servers", {
    name: "gone-1",
    hostname: "127.0.0.1",
    grpc_port: await freePort(),
  });
  await stack.api("POST", "/api/users", { name: "Active Anna" });
  await stack.api("POST", "/api/users", { name: "Active Arno" });
  await stack.api("POST", "/api/users", {
    name: "Expired Emil",
    expire_at: new Date(Date.now() - 86_400_000).toISOString(),
  });
  agentPort = await freePort();
});
test.afterAll(async () => {
  await stack?.stop();
});

test("a node server: the join command as shown joins the host; the agent's report and the core's log", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);

  // Registered in the browser as a node server at the agent's address.
  await page.getByRole("link", { name: "Servers" }).click();
  await page.getByRole("button", { name: "New server" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("edge-1");
  await dialog.getByRole("textbox", { name: "Hostname", exact: true }).fill("127.0.0.1");
  await dialog.getByText("node agent").click();
  await dialog.getByRole("textbox", { name: "API port", exact: true }).fill(String(agentPort));
  await dialog.getByRole("button", { name: "Create" }).click();
  await expect(page.getByRole("heading", { name: "edge-1", level: 2 })).toBeVisible();
  nodeServerId = page.url().split("/").pop() ?? "";
  const stored = await stack.api<{ connection: string; grpc_port: number }>(
    "GET",
    `/api/servers/${nodeServerId}`,
  );
  expect(stored).toMatchObject({ connection: "node", grpc_port: agentPort });

  // Before the join: the agent does not answer, said in red with what to do.
  const section = page.getByTestId("node-section");
  await expect(section.getByTestId("agent-unreachable")).toBeVisible();

  // The join command, with a copy button; single use, an hour.
  await section.getByRole("button", { name: "Make a join command" }).click();
  const command = (await section.getByTestId("join-command").textContent()) ?? "";
  expect(command).toMatch(/^portcullis node join 'pcn1\.[A-Za-z0-9_-]+'$/);
  await expect(section.getByRole("button", { name: "Copy the join command" })).toBeVisible();
  await expect(section.getByTestId("join-expiry")).toContainText("Single use; expires in an hour");
  expect(await severeViolations(page, "node section")).toEqual([]);

  // Run exactly that text in a shell on "the proxy host" (here `portcullis` is the CLI from source).
  const dir = tempDir(stack.cleanup.add);
  const joined = spawnSync(
    "sh",
    [
      "-c",
      `portcullis() { "${process.execPath}" --import tsx src/main.ts "$@" --dir "$NODE_DIR"; }\n${command}`,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, NODE_DIR: dir, LOG_LEVEL: "warn" },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(joined.status, joined.stderr).toBe(0);
  expect(joined.stdout).toContain(`this host is server ${nodeServerId}`);
  // Single use: the same command again is refused by the panel.
  const again = spawnSync(
    "sh",
    [
      "-c",
      `portcullis() { "${process.execPath}" --import tsx src/main.ts "$@" --dir "$NODE_DIR"; }\n${command}`,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, NODE_DIR: tempDir(stack.cleanup.add) },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(again.status).not.toBe(0);
  expect(again.stderr).toContain("refused the join");

  startAgent(dir);

  // The agent's report (polled by the page) and the core's log through the agent.
  await expect(section.getByTestId("core-state")).toHaveAttribute("data-state", "running", {
    timeout: 60_000,
  });
  await expect(section.getByTestId("agent-core")).toHaveText(/^v2ray \d/);
  await expect(section.getByTestId("agent-unreachable")).toHaveCount(0);
  await section.getByRole("button", { name: "Refresh" }).nth(1).click();
  await expect(section.getByTestId("node-log")).toContainText("V2Ray", { timeout: 30_000 });
  const log = await stack.api<{ lines: string[] }>("GET", `/api/servers/${nodeServerId}/node-log`);
  expect(log.lines.some((line) => line.includes("V2Ray"))).toBe(true);
  await expect(page.getByTestId("server-status").first()).toHaveText("online", { timeout: 60_000 });
  expect(problems).toEqual([]);
});

test("the base document: a refused one shows its path and line, an accepted one is stored, reset", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.goto(`${base}/dashboard/servers/${nodeServerId}`);
  const editor = page.getByTestId("node-base");
  await expect(editor.getByTestId("base-kind")).toHaveText("default");
  const field = editor.getByTestId("node-base-document");
  await expect(field).toHaveValue(/"loglevel": "warning"/);

  const refused = JSON.stringify(
    { log: { loglevel: "loud" }, outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }] },
    null,
    2,
  );
  await field.fill(refused);
  await editor.getByRole("button", { name: "Save" }).click();
  const errors = editor.getByTestId("node-base-document-errors");
  await expect(errors).toContainText("line 3 · log.loglevel");
  await expect(errors).toContainText("must be one of");
  await expect(editor.getByTestId("base-refused")).toContainText("the base document is not accepted");
  expect(await severeViolations(page, "refused base document")).toEqual([]);
  const still = await stack.api<{ is_default: boolean }>("GET", `/api/servers/${nodeServerId}/node-base`);
  expect(still.is_default).toBe(true);
  // A JSON syntax error is the field's own, and Save is off.
  await field.fill('{"log": {');
  await expect(editor.getByText(/^Not valid JSON/)).toBeVisible();
  await expect(editor.getByRole("button", { name: "Save" })).toBeDisabled();

  const accepted = {
    log: { loglevel: "info" },
    outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }],
  };
  await field.fill(JSON.stringify(accepted, null, 2));
  await editor.getByRole("button", { name: "Save" }).click();
  await expect(editor.getByTestId("base-kind")).toHaveText("edited");
  await expect(errors).toHaveCount(0);
  const saved = await stack.api<{ document: unknown; is_default: boolean }>(
    "GET",
    `/api/servers/${nodeServerId}/node-base`,
  );
  expect(saved.is_default).toBe(false);
  expect(saved.document).toMatchObject(accepted);

  await editor.getByRole("button", { name: "Reset to default" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(editor.getByTestId("base-kind")).toHaveText("default");
  await expect(field).toHaveValue(/"loglevel": "warning"/);
  const reset = await stack.api<{ is_default: boolean }>("GET", `/api/servers/${nodeServerId}/node-base`);
  expect(reset.is_default).toBe(true);
  expect(problems).toEqual([]);
});

test("sign-in lands on the overview: servers, agents, the offline one as a problem, users by status", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await expect(page).toHaveURL(`${base}/dashboard/`);
  await expect(page.getByRole("heading", { name: "Overview", level: 2 })).toBeVisible();
  const rows = page.getByTestId("fleet-server");
  await expect(rows).toHaveCount(3);

  const direct = rows.filter({ hasText: "direct-1" });
  await expect(direct.getByTestId("server-status")).toHaveText("online");
  await expect(direct.getByTestId("fleet-connection")).toHaveText("direct");
  await expect(direct.getByTestId("fleet-core")).toHaveText(/^v2ray/);

  const edge = rows.filter({ hasText: "edge-1" });
  await expect(edge.getByTestId("fleet-connection")).toHaveText("node agent");
  await expect(edge.getByTestId("agent-state")).toHaveAttribute("data-state", "running");
  await expect(edge.getByTestId("fleet-core")).toContainText(/^v2ray \d/);
  await expect(edge.getByTestId("fleet-restarts")).toHaveText(/^\d+$/);
  await expect(edge.getByTestId("fleet-uptime")).not.toHaveText("—");

  // Offline is red and counted at the top, not a grey row.
  const gone = rows.filter({ hasText: "gone-1" });
  await expect(gone.getByTestId("server-status")).toHaveAttribute("data-status", /^(offline|error)$/);
  await expect(gone).toHaveAttribute("data-down", "true");
  await expect(page.getByTestId("servers-down")).toContainText("gone-1");
  await expect(page.getByTestId("servers-down")).toContainText("Servers offline: 1");

  const overview = await stack.api<Overview>("GET", "/api/overview");
  expect(overview.users.by_status).toMatchObject({ active: 2, expired: 1 });
  await expect(page.getByTestId("users-active")).toContainText("2");
  await expect(page.getByTestId("users-expired")).toContainText("1");
  await expect(page.getByTestId("users-total")).toHaveText(String(overview.users.total));
  await expect(page.getByTestId("online-users")).toHaveText(String(overview.online.users));
  await expect(page.getByTestId("servers-online")).toHaveText("2 of 3");
  await expect(page.getByTestId("traffic-today")).toContainText("↑");
  await expect(page.getByTestId("traffic-week")).toContainText("Last 7 days");
  expect(await severeViolations(page, "overview")).toEqual([]);

  // A server's name leads to its page.
  await edge.getByRole("link", { name: "edge-1" }).click();
  await expect(page.getByRole("heading", { name: "edge-1", level: 2 })).toBeVisible();

  // On a phone: the page itself does not scroll sideways (the table scrolls in its own box).
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/dashboard/`);
  await expect(page.getByTestId("fleet-server")).toHaveCount(3);
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow).toBeLessThanOrEqual(0);
  expect(await severeViolations(page, "overview on a phone")).toEqual([]);
  expect(problems).toEqual([]);
});

test("the subscription settings leave offline servers out after the minutes set on the page", async ({
  page,
}) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.goto(`${base}/dashboard/settings/subscription`);
  const leaveOut = page.getByRole("switch", { name: "Leave out offline servers" });
  const minutes = page.getByRole("textbox", { name: "Offline for longer than (minutes)" });
  const before = await stack.api<{ leave_out_offline_servers: boolean; offline_minutes: number }>(
    "GET",
    "/api/subscription-settings",
  );
  await expect(leaveOut).toBeChecked({ checked: before.leave_out_offline_servers });
  await expect(minutes).toHaveValue(String(before.offline_minutes));
  // The switch's track covers its input: toggled from the keyboard.
  await leaveOut.focus();
  await page.keyboard.press("Space");
  await minutes.fill("45");
  const put = page.waitForRequest(
    (r) => r.method() === "PUT" && r.url().endsWith("/api/subscription-settings"),
  );
  await page.getByRole("button", { name: "Save" }).click();
  expect((await put).postDataJSON()).toEqual({
    leave_out_offline_servers: !before.leave_out_offline_servers,
    offline_minutes: 45,
  });
  await expect(page.getByText("Saved")).toBeVisible();
  const after = await stack.api<{ leave_out_offline_servers: boolean; offline_minutes: number }>(
    "GET",
    "/api/subscription-settings",
  );
  expect(after).toMatchObject({
    leave_out_offline_servers: !before.leave_out_offline_servers,
    offline_minutes: 45,
  });
  expect(problems).toEqual([]);
});

test("in Persian: the overview and the node section keep every number with its unit isolated", async ({
  browser,
}) => {
  const context = await browser.newContext({ locale: "fa-IR" });
  const page = await context.newPage();
  try {
    await page.addInitScript(() => localStorage.setItem("portcullis.language", "fa"));
    await page.goto(`${base}/dashboard/`);
    await page.locator('input[autocomplete="username"]').fill("admin");
    await page.locator('input[autocomplete="current-password"]').fill("correct horse battery");
    await page.locator('button[type="submit"]').click();
    // Signed in (the token stored) before any navigation: the overview is where it lands.
    await expect(page.getByTestId("fleet-traffic")).toBeVisible();
    let isolated = 0;
    for (const path of ["/", `/servers/${nodeServerId}`]) {
      await page.goto(`${base}/dashboard${path}`);
      await expect(page.locator("html")).toHaveAttribute("dir", "rtl");
      // The agent's uptime: a number with a unit, on both pages once the agent has answered.
      await expect(page.getByTestId(path === "/" ? "fleet-uptime" : "core-state").first()).toBeVisible();
      await page.waitForLoadState("networkidle");
      const found = await unitsOutsideIsolates(page);
      expect(found.outside, path).toEqual([]);
      isolated += found.isolated;
    }
    expect(isolated).toBeGreaterThan(2);
  } finally {
    await context.close();
  }
});
