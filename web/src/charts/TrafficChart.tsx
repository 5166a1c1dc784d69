// Upload/download bars per name (servers of a user, inbounds of a server). The charting library
// loads with the first chart shown, not with the page.
import { Skeleton } from "@mantine/core";
import { lazy, Suspense } from "react";
import { useT } from "../i18n/i18n.tsx";
import type { UsageRow } from "./UsageChart.tsx";

const UsageChart = lazy(() => import("./UsageChart.tsx").then((m) => ({ default: m.UsageChart })));

export function TrafficChart({ rows }: { rows: UsageRow[] }) {
  const t = useT();
  return (
    <Suspense fallback={<Skeleton h={160} />}>
      <UsageChart rows={rows} upLabel={t("usage.uplink")} downLabel={t("usage.downlink")} />
    </Suspense>
  );
}
