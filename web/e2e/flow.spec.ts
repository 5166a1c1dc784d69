// The operator's whole day in a real browser against a real core: sign in, register a V2Ray core
// and see it go online, make a certificate and an inbound from a starter template with its
// variables, create a user, grant access, copy the share link and prove with a real v2ray client
// that it carries traffic; then revoke (the traffic stops) and delete.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { toV2rayOutbound } from "../../test/support/link-client-configs.ts";
import { decodeLink } from "../../test/support/link-decoder.ts";
import { waitFor } from "../../test/support/poll.ts";
import { freePort } from "../../test/support/ports.ts";
import { fetchViaSocks, startHttpServer, startV2rayClient, tempDir } from "../../test/support/v2ray.ts";
import { signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

let stack: Stack;
test.beforeAll(async () => {
  stack = await startStack({ core: true });
});
test.afterAll(async () => {
  await stack?.stop();
});

test.use({ permissions: ["clipboard-read", "clipboard-write"] });

test("an operator connects a user through a real core from the dashboard alone", async ({ page }) => {
  const problems = watchForProblems(page);
  const core = stack.core;
  if (core === undefined) throw new Error("no core");
  const base = stack.portcullis.baseUrl;
  await signIn(page, base);

  // A certificate for the TLS inbound: self-signed for localhost.
  await page.getByRole("link", { name: "Certificates" }).click();
  await page.getByRole("button", { name: "New certificate" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("localhost");
  await page.getByRole("textbox", { name: "Domain", exact: true }).fill("localhost");
  await page.getByRole("button", { name: "Create" }).click();
  const certRow = page.getByTestId("certificate-row").filter({ hasText: "localhost" });
  await expect(certRow.getByTestId("certificate-status")).toHaveText("valid");
  await expect(certRow.getByTestId("certificate-countdown")).toHaveText(/^36[45] days left$/);

  // The server: created from the form, online once the reconciler reaches its core.
  await page.getByRole("link", { name: "Servers" }).click();
  await page.getByRole("button", { name: "New server" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("local");
  await page.getByRole("textbox", { name: "Hostname", exact: true }).fill("127.0.0.1");
  await page.getByRole("textbox", { name: "API port", exact: true }).fill(String(core.apiPort));
  await page.getByRole("button", { name: "Create" }).click();
  await expect(page.getByRole("heading", { name: "local", level: 2 })).toBeVisible();
  await expect(page.getByTestId("server-status").first()).toHaveText("online");
  await expect(page.getByTestId("server-core")).toHaveText(/^v2ray/);

  // An inbound from the vless-ws-tls starter, its ws_path variable filled in the form.
  const port = await freePort();
  await page.getByRole("button", { name: "New inbound" }).click();
  await page.getByRole("combobox", { name: "Template" }).fill("vless-ws");
  await page.getByRole("option", { name: /^vless-ws-tls/ }).click();
  await expect(page.getByTestId("template-variables")).toBeVisible();
  await page.getByRole("textbox", { name: "Port", exact: true }).fill(String(port));
  await page.getByRole("combobox", { name: "Certificate" }).click();
  await page.getByRole("option", { name: /^localhost/ }).click();
  await page.getByRole("textbox", { name: "ws_path", exact: true }).fill("/from-the-dashboard");
  await page.getByRole("button", { name: "Create" }).click();
  const inboundRow = page.getByTestId("inbound-row").filter({ hasText: "vless-ws-tls" });
  await expect(inboundRow.getByTestId("sync-state")).toHaveText("synced");

  // A user, granted that inbound in two clicks (open the picker, pick).
  await page.getByRole("link", { name: "Users" }).click();
  await page.getByRole("button", { name: "New user" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("Alice from the browser");
  // exact: the users table's "Created" column header is a sort button too.
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Alice from the browser" })).toBeVisible();
  await page.getByTestId("grant-picker").click();
  await page.getByRole("option", { name: /^local · vless-ws-tls/ }).click();
  const grant = page.getByTestId("grant");
  await expect(grant.getByTestId("sync-state")).toHaveText("synced");
  await expect(grant.getByTestId("share-link")).toContainText("path=%2Ffrom-the-dashboard");

  // The share link, as the copy button puts it on the clipboard, drives a real client.
  await grant.getByRole("button", { name: "Copy share link" }).click();
  const link = await page.evaluate(() => navigator.clipboard.readText());
  expect(link).toMatch(/^vless:\/\//);
  await grant.getByRole("button", { name: "Show QR code" }).click();
  await expect(page.getByTestId("qr-code")).toBeVisible();
  await page.keyboard.press("Escape");

  const certificates = await stack.api<{ name: string; certificate_pem: string }[]>(
    "GET",
    "/api/certificates",
  );
  const dir = tempDir(stack.cleanup.add);
  const caFile = join(dir, "ca.pem");
  writeFileSync(caFile, certificates.find((c) => c.name === "localhost")?.certificate_pem ?? "");
  const socksPort = await freePort();
  await startV2rayClient(
    stack.cleanup.add,
    {
      log: { loglevel: "warning" },
      inbounds: [
        { listen: "127.0.0.1", port: socksPort, protocol: "socks", settings: { auth: "noauth", udp: false } },
      ],
      outbounds: [toV2rayOutbound(decodeLink(link), { caFile })],
    },
    [socksPort],
  );
  const body = Buffer.from("carried through the inbound the dashboard made");
  const origin = await startHttpServer(stack.cleanup.add, body);
  const response = await waitFor(
    () => fetchViaSocks(socksPort, { port: origin, path: "/" }, 5000).catch(() => undefined),
    { timeoutMs: 20_000, what: "a response through the proxy" },
  );
  expect(response.status).toBe(200);
  expect(response.body.toString()).toBe(body.toString());

  // Revoke, confirmed: the grant is gone and the core no longer lets the client through.
  await grant.getByRole("button", { name: "Revoke access" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(page.getByTestId("grant")).toHaveCount(0);
  await expect(page.getByText("No access yet")).toBeVisible();
  await waitFor(
    () =>
      fetchViaSocks(socksPort, { port: origin, path: "/" }, 3000).then(
        () => false,
        () => true,
      ),
    { timeoutMs: 20_000, what: "the revoked link to stop carrying traffic" },
  );

  // Delete the user, confirmed; the list no longer has them.
  const userUrl = page.url();
  await page.getByRole("button", { name: "Delete user" }).click();
  await page.getByRole("button", { name: "Yes, do it" }).click();
  await expect(page.getByRole("heading", { name: "Users", level: 2 })).toBeVisible();
  await page.getByTestId("user-search").fill("Alice");
  await expect(page.getByText("No user matches “Alice”.")).toBeVisible();
  const id = userUrl.split("/").pop() ?? "";
  const gone = await stack.portcullis.api("GET", `/api/users/${id}`);
  expect(gone.status).toBe(404);

  expect(problems).toEqual([]);
});

test("an API error reaches the operator with its detail", async ({ page }) => {
  await signIn(page, stack.portcullis.baseUrl);
  await page.getByRole("link", { name: "Servers" }).click();
  await page.getByRole("button", { name: "New server" }).click();
  await page.getByRole("textbox", { name: "Name", exact: true }).fill("bad");
  await page.getByRole("textbox", { name: "Hostname", exact: true }).fill("not a host name");
  await page.getByRole("button", { name: "Create" }).click();
  // What the API itself answers to the same request is what the operator reads.
  const answer = await stack.portcullis.api("POST", "/api/servers", {
    name: "bad",
    hostname: "not a host name",
    grpc_port: 2053,
  });
  const problem = (await answer.json()) as { status: number; title: string; code: string; detail: string };
  expect(problem.status).toBe(400);
  await expect(page.getByTestId("error-detail")).toHaveText(problem.detail);
  await expect(page.getByText(`${problem.status} ${problem.title} (${problem.code})`)).toBeVisible();
});
