// Upload/download bars per name (servers of a user, inbounds of a server). The charting library
// loads with the first chart shown, not with the page.
import { Skeleton } from "@mantine/core";
import { lazy, Suspense } from "react";
import { useT } from "../i18n/i18n.tsx";
import type { UsageRow } from "./UsageChart.tsx";

const UsageChart = lazy(() => import("./UsageChart.tsx").then((m) => ({ default: m.UsageChart })));

type Counted = { uplink_bytes: number; downlink_bytes: number };

/** `items` are anything with byte counters; `name` labels each bar. */
export function TrafficChart<T extends Counted>({ items, name }: { items: T[]; name: (item: T) => string }) {
  const t = useT();
  const rows: UsageRow[] = items.map((i) => ({ name: name(i), up: i.uplink_bytes, down: i.downlink_bytes }));
  return (
    <Suspense fallback={<Skeleton h={160} />}>
      <UsageChart rows={rows} upLabel={t("usage.uplink")} downLabel={t("usage.downlink")} />
    </Suspense>
  );
}
