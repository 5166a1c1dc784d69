// The browser tests run against the built dashboard: build it first when its sources changed.
// @ts-expect-error: a plain ES module without types (scripts/build-dashboard.mjs)
import { buildDashboardIfStale } from "../../../scripts/build-dashboard.mjs";

export default async function globalSetup(): Promise<void> {
  await buildDashboardIfStale();
}
