// Traffic over time for one user or one server: the last 24 hours by hour or the last 30 days by
// day, from the usage history (GET /api/users/{id}/usage?from&to&granularity, GET /api/usage).
// Hours are labelled in the browser's time zone; days are UTC days, as the server buckets them.
import { Card, Group, SegmentedControl, Skeleton, Stack, Text, Title } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { lazy, Suspense, useState } from "react";
import { useI18n } from "../i18n/i18n.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { UpDown } from "../ui/Num.tsx";
import type { HistoryRow } from "./HistoryBars.tsx";

const HistoryBars = lazy(() => import("./HistoryBars.tsx").then((m) => ({ default: m.HistoryBars })));

export type Granularity = "hour" | "day";
export type HistoryRange = { from: string; to: string; granularity: Granularity };
export type HistoryBucket = { start: string; uplink_bytes: number; downlink_bytes: number };

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The window ending with the current (unfinished) hour or UTC day. */
export function historyRange(granularity: Granularity, now = Date.now()): HistoryRange {
  const step = granularity === "hour" ? HOUR_MS : DAY_MS;
  const end = (Math.floor(now / step) + 1) * step;
  const count = granularity === "hour" ? 24 : 30;
  return {
    from: new Date(end - count * step).toISOString(),
    to: new Date(end).toISOString(),
    granularity,
  };
}

function labelOf(start: string, granularity: Granularity, locale: string): string {
  const at = new Date(start);
  return granularity === "hour"
    ? at.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" })
    : at.toLocaleDateString(locale, { day: "numeric", month: "short", timeZone: "UTC" });
}

export function UsageHistoryCard({
  title,
  queryKey,
  load,
}: {
  title: string;
  queryKey: readonly unknown[];
  load: (range: HistoryRange) => Promise<HistoryBucket[]>;
}) {
  const { t, language } = useI18n();
  const [granularity, setGranularity] = useState<Granularity>("hour");
  const history = useQuery({
    queryKey: [...queryKey, "history", granularity],
    queryFn: () => load(historyRange(granularity)),
    refetchInterval: 60_000,
  });
  const buckets = history.data ?? [];
  const up = buckets.reduce((sum, b) => sum + b.uplink_bytes, 0);
  const down = buckets.reduce((sum, b) => sum + b.downlink_bytes, 0);
  const rows: HistoryRow[] = buckets.map((b) => ({
    label: labelOf(b.start, granularity, language),
    up: b.uplink_bytes,
    down: b.downlink_bytes,
  }));
  return (
    <Card withBorder>
      <Stack gap="xs" data-testid="usage-history">
        <Group justify="space-between">
          <Title order={3}>{title}</Title>
          <SegmentedControl
            size="xs"
            aria-label={t("history.period")}
            value={granularity}
            onChange={(value) => setGranularity(value === "day" ? "day" : "hour")}
            data={[
              { value: "hour", label: t("history.last24h") },
              { value: "day", label: t("history.last30d") },
            ]}
          />
        </Group>
        {history.error && <ErrorAlert error={history.error} />}
        {history.isLoading && <Skeleton h={220} />}
        {history.data &&
          (up + down === 0 ? (
            <Text size="sm" c="dimmed">
              {t("history.none")}
            </Text>
          ) : (
            <>
              <Text size="sm">
                <UpDown up={up} down={down} />
              </Text>
              <Suspense fallback={<Skeleton h={220} />}>
                <HistoryBars rows={rows} upLabel={t("usage.uplink")} downLabel={t("usage.downlink")} />
              </Suspense>
            </>
          ))}
      </Stack>
    </Card>
  );
}
