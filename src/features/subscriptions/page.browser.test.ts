// The subscription page in Debian's Chromium (playwright-core with its executable path; no browser
// is ever downloaded): at 390×844 and 1280×800 in English, Russian, Persian and Chinese it renders,
// every QR code decodes (jsqr, from a screenshot of the code) to exactly the URL or deep link next to
// it, the copy button copies the URL, no request leaves for another origin, and the policy blocks
// what it should (no framing, no inline script without the nonce). PORTCULLIS_WRITE_SCREENSHOTS=1
// writes the screenshots under docs/subscription-page/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import jsQR from "jsqr";
import { type Browser, chromium } from "playwright-core";
import { PNG } from "pngjs";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { withCacheFastPath } from "./fast-path.ts";

const CHROMIUM = process.env.PORTCULLIS_CHROMIUM ?? "/usr/bin/chromium";
const needs = requires(CHROMIUM);
const SHOTS = resolve(import.meta.dirname, "../../../docs/subscription-page");
const WRITE = process.env.PORTCULLIS_WRITE_SCREENSHOTS === "1";

let t: TestApp;
let server: Server;
let base: string;
let subscriptionPath: string;
let browser: Browser;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  const serverId = (
    await registerServer(t, await freePort(), { name: "Amsterdam", hostname: "ams1.vpn.example.net" })
  ).id;
  const user = (await request(t, "POST", "/api/users", { name: "Alice Example" })).json() as {
    id: string;
    subscription_url: string;
  };
  subscriptionPath = user.subscription_url;
  for (const kind of [
    { protocol: "vless", network: "ws", tls: false },
    { protocol: "trojan", network: "tcp", tls: false },
  ] as const) {
    const template = await templateFor(t, kind);
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
    await grant(t, serverId, inbound.id, { user_id: user.id });
  }
  server = createServer(
    withCacheFastPath(t.deps.services.subscriptions, (req, res) => t.app.routing(req, res)),
  );
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});
needs.after(async () => {
  await browser.close();
  await new Promise((done) => server.close(done));
  await t.close();
});

const SIZES = [
  { name: "phone", width: 390, height: 844 },
  { name: "desktop", width: 1280, height: 800 },
] as const;
const LANGUAGES = [
  { locale: "en-US", lang: "en", dir: "ltr", heading: "Your subscription" },
  { locale: "ru-RU", lang: "ru", dir: "ltr", heading: "Ваша подписка" },
  { locale: "fa-IR", lang: "fa", dir: "rtl", heading: "اشتراک شما" },
  { locale: "zh-CN", lang: "zh", dir: "ltr", heading: "您的订阅" },
] as const;

/** The QR code in a screenshot of one element, decoded. */
function decodeQr(png: Buffer): string | undefined {
  const image = PNG.sync.read(png);
  return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data;
}

describe("the subscription page in Chromium", needs, () => {
  for (const size of SIZES) {
    for (const language of LANGUAGES) {
      test(`${size.width}×${size.height}, ${language.locale}: renders, QR codes decode to their links, nothing from another origin`, async () => {
        const context = await browser.newContext({
          viewport: { width: size.width, height: size.height },
          locale: language.locale,
          deviceScaleFactor: 1,
        });
        try {
          const page = await context.newPage();
          const foreign: string[] = [];
          page.on("request", (req) => {
            const url = req.url();
            if (!url.startsWith(base) && !url.startsWith("data:")) foreign.push(url);
          });
          const response = await page.goto(`${base}${subscriptionPath}`);
          assert.equal(response?.status(), 200);
          assert.equal(response?.headers()["content-type"], "text/html; charset=utf-8");
          const html = page.locator("html");
          assert.equal(await html.getAttribute("lang"), language.lang);
          assert.equal(await html.getAttribute("dir"), language.dir);
          assert.ok((await page.locator("h1").textContent())?.includes(language.heading));
          const url = `${base}${subscriptionPath}`;
          assert.equal(await page.locator("[data-url]").textContent(), url);
          // Nothing wider than the screen: readable on a phone.
          const overflow = (await page.evaluate(
            "document.documentElement.scrollWidth - window.innerWidth",
          )) as number;
          assert.ok(overflow <= 0, `the page is ${overflow} px wider than the viewport`);
          const codes = page.locator("img.qr");
          const count = await codes.count();
          assert.equal(count, 8, "the URL and seven apps");
          for (let i = 0; i < count; i++) {
            const code = codes.nth(i);
            await code.scrollIntoViewIfNeeded();
            const expected = (await code.getAttribute("data-qr")) ?? "";
            assert.equal(decodeQr(await code.screenshot()), expected, `QR ${i}`);
          }
          const hrefs = await page
            .locator("a.app")
            .evaluateAll((links) => links.map((a) => a.getAttribute("href")));
          const encoded = encodeURIComponent(url);
          assert.ok(hrefs.includes(`v2rayng://install-config?url=${encoded}#Alice%20Example`));
          assert.ok(hrefs.includes(`happ://add/${url}`));
          assert.ok(
            hrefs.some((href) =>
              href?.startsWith(
                `sing-box://import-remote-profile?url=${encodeURIComponent(`${url}/sing-box`)}`,
              ),
            ),
          );
          assert.equal(await page.locator(".links li").count(), 2);
          if (WRITE) {
            mkdirSync(SHOTS, { recursive: true });
            await page.screenshot({ path: join(SHOTS, `${language.lang}-${size.name}.png`), fullPage: true });
          }
          assert.deepEqual(foreign, []);
        } finally {
          await context.close();
        }
      });
    }
  }

  test("the copy button copies the URL; an injected inline script does not run", async () => {
    const context = await browser.newContext({ permissions: ["clipboard-read", "clipboard-write"] });
    try {
      const page = await context.newPage();
      await page.goto(`${base}${subscriptionPath}`);
      await page.locator("button[data-copy]").click();
      const copied = await page.evaluate("navigator.clipboard.readText()");
      assert.equal(copied, `${base}${subscriptionPath}`);
      await page.evaluate(
        'const s = document.createElement("script"); s.textContent = "window.__ran = true"; document.body.appendChild(s)',
      );
      assert.equal(await page.evaluate("window.__ran"), undefined);
    } finally {
      await context.close();
    }
  });
});
