// Browser tests of the dashboard: Debian's Chromium (no browser download, ever), one worker (the
// machine has two shared cores and the tests start real cores), the service as a real process.
import { defineConfig } from "@playwright/test";

export const CHROMIUM = process.env.PORTCULLIS_CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "./e2e",
  outputDir: "../test-results/e2e",
  globalSetup: "./e2e/support/global-setup.ts",
  timeout: 180_000,
  expect: { timeout: 20_000 },
  workers: 1,
  fullyParallel: false,
  forbidOnly: true,
  retries: 0,
  reporter: [["list"]],
  use: {
    browserName: "chromium",
    launchOptions: { executablePath: CHROMIUM, args: ["--no-sandbox"] },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    actionTimeout: 15_000,
  },
});
