// Upload/download bars: per name (servers of a user, inbounds of a server) and, through
// HistoryBars, per hour or day. Loaded with the page that shows them, so the charting library stays
// out of the initial bundle.
import "@mantine/charts/styles.css";
import { BarChart } from "@mantine/charts";
import { formatBytes } from "../ui/format.ts";

export type UsageRow = { name: string; up: number; down: number };

type Labels = { upLabel: string; downLabel: string };

/** Stacked upload/download bars; `byName` lays them across, one row per name. */
export function UpDownBars<R extends { up: number; down: number }>({
  rows,
  dataKey,
  byName,
  upLabel,
  downLabel,
}: { rows: R[]; dataKey: keyof R & string; byName: boolean } & Labels) {
  // A chart reads left to right in every language (time, and bytes with their units): isolated.
  return (
    <div dir="ltr">
      <BarChart
        h={byName ? Math.max(160, rows.length * 48) : 220}
        data={rows}
        dataKey={dataKey}
        orientation={byName ? "vertical" : "horizontal"}
        type="stacked"
        valueFormatter={formatBytes}
        withLegend
        yAxisProps={byName ? { width: 120 } : { width: 80, tickFormatter: formatBytes }}
        series={[
          { name: "up", label: upLabel, color: "blue.6" },
          { name: "down", label: downLabel, color: "teal.6" },
        ]}
      />
    </div>
  );
}

export function UsageChart({ rows, ...labels }: { rows: UsageRow[] } & Labels) {
  return <UpDownBars rows={rows} dataKey="name" byName {...labels} />;
}
