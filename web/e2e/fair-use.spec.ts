// Fair use on the user page (issue 50), against a real `portcullis serve`: the device limit and IP
// limit are fields of the user's form; the devices an app fetched /sub from are listed and one is
// removed (the API then lists one); the addresses and blocks section says there are none yet.
import { expect, test } from "@playwright/test";
import { severeViolations, signIn, watchForProblems } from "./support/pages.ts";
import { type Stack, startStack } from "./support/stack.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;
let base: string;
let user: { id: string; subscription_url: string };

test.beforeAll(async () => {
  stack = await startStack({ core: false });
  base = stack.portcullis.baseUrl;
  user = await stack.api<{ id: string; subscription_url: string }>("POST", "/api/users", {
    name: "Dana Devices",
    device_limit: 2,
  });
  const devices = [
    ["hwid-phone", "Pixel 8"],
    ["hwid-laptop", "ThinkPad"],
  ] as const;
  for (const [hwid, model] of devices) {
    const res = await fetch(`${base}${user.subscription_url}/base64`, {
      headers: {
        "user-agent": "Happ/3.1.2",
        "x-hwid": hwid,
        "x-device-os": "Android",
        "x-device-model": model,
      },
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-hwid-active")).toBe("true");
  }
});
test.afterAll(async () => {
  await stack?.stop();
});

test("devices listed and removed, device and IP limits edited on the user page", async ({ page }) => {
  const problems = watchForProblems(page);
  await signIn(page, base);
  await page.goto(`${base}/dashboard/users/${user.id}`);

  const card = page.getByTestId("fair-use-card");
  await expect(card.getByTestId("device")).toHaveCount(2);
  await expect(card.getByTestId("devices")).toContainText("limit 2");
  const laptop = card.getByTestId("device").filter({ hasText: "ThinkPad" });
  await expect(laptop).toContainText("hwid-laptop");
  await laptop.getByRole("button", { name: "Remove device" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Yes, do it" }).click();
  await expect(card.getByTestId("device")).toHaveCount(1);
  const listed = await stack.api<{ devices: { hwid: string }[] }>("GET", `/api/users/${user.id}/devices`);
  expect(listed.devices.map((d) => d.hwid)).toEqual(["hwid-phone"]);
  await expect(card.getByTestId("addresses")).toContainText("No address seen in the window.");
  await expect(card).toContainText("Never blocked.");

  const limits = page.getByTestId("limits-card");
  await expect(limits.getByTestId("limit-devices")).toHaveValue("2");
  await limits.getByTestId("limit-devices").fill("3");
  await limits.getByTestId("limit-ips").fill("4");
  await limits.getByTestId("limits-save").click();
  await expect
    .poll(async () => {
      const stored = await stack.api<{ device_limit: number; ip_limit: number }>(
        "GET",
        `/api/users/${user.id}`,
      );
      return [stored.device_limit, stored.ip_limit];
    })
    .toEqual([3, 4]);
  await expect(card.getByTestId("devices")).toContainText("limit 3");
  expect(await severeViolations(page, "user page with fair use")).toEqual([]);
  expect(problems).toEqual([]);
});
