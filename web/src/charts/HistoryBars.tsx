// Upload/download per hour or day, oldest left: loaded with the first history chart shown, so the
// charting library stays out of the initial bundle.
import "@mantine/charts/styles.css";
import { BarChart } from "@mantine/charts";
import { formatBytes } from "../ui/format.ts";

export type HistoryRow = { label: string; up: number; down: number };

export function HistoryBars({
  rows,
  upLabel,
  downLabel,
}: {
  rows: HistoryRow[];
  upLabel: string;
  downLabel: string;
}) {
  // A chart reads left to right in every language (time, and bytes with their units): isolated.
  return (
    <div dir="ltr">
      <BarChart
        h={220}
        data={rows}
        dataKey="label"
        type="stacked"
        valueFormatter={formatBytes}
        withLegend
        yAxisProps={{ width: 80, tickFormatter: formatBytes }}
        series={[
          { name: "up", label: upLabel, color: "blue.6" },
          { name: "down", label: downLabel, color: "teal.6" },
        ]}
      />
    </div>
  );
}
