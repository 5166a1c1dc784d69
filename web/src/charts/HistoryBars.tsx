// Upload/download per hour or day, oldest left: loaded with the first history chart shown, so the
// charting library stays out of the initial bundle.
import { UpDownBars } from "./UsageChart.tsx";

export type HistoryRow = { label: string; up: number; down: number };

export function HistoryBars({ rows, ...labels }: { rows: HistoryRow[]; upLabel: string; downLabel: string }) {
  return <UpDownBars rows={rows} dataKey="label" byName={false} {...labels} />;
}
