// Traffic bars (per server for a user, per inbound for a server): loaded with the page that shows
// them, so the charting library stays out of the initial bundle.
import "@mantine/charts/styles.css";
import { BarChart } from "@mantine/charts";
import { formatBytes } from "../ui/format.ts";

export type UsageRow = { name: string; up: number; down: number };

export function UsageChart({
  rows,
  upLabel,
  downLabel,
}: {
  rows: UsageRow[];
  upLabel: string;
  downLabel: string;
}) {
  // A chart reads left to right in every language (time, and bytes with their units): isolated.
  return (
    <div dir="ltr">
      <BarChart
        h={Math.max(160, rows.length * 48)}
        data={rows}
        dataKey="name"
        orientation="vertical"
        type="stacked"
        valueFormatter={formatBytes}
        withLegend
        yAxisProps={{ width: 120 }}
        series={[
          { name: "up", label: upLabel, color: "blue.6" },
          { name: "down", label: downLabel, color: "teal.6" },
        ]}
      />
    </div>
  );
}
