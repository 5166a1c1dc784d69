// A delivery log (a webhook's or the admin's Telegram): newest first, paged, refreshed while
// anything waits, each row with its status, attempts, last HTTP status and last error.
import { Badge, Card, Stack, Table, Text, Tooltip } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import type { Delivery, DeliveryPage } from "../api/types.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { formatDate } from "./format.ts";
import { DataTable, ListState, Pager, SectionHeader } from "./Scaffold.tsx";

const PER_PAGE = 20;
const COLORS: Record<string, string> = { delivered: "teal", pending: "yellow", dead: "red" };

function DeliveryStatus({ delivery }: { delivery: Delivery }) {
  const { t } = useI18n();
  const known =
    delivery.status === "delivered" || delivery.status === "pending" || delivery.status === "dead";
  return (
    <Badge color={COLORS[delivery.status] ?? "gray"} variant="light" data-testid="delivery-status">
      {known ? t(`delivery.${delivery.status as "delivered" | "pending" | "dead"}`) : delivery.status}
    </Badge>
  );
}

export function DeliveryLog({
  queryKey,
  fetchPage,
}: {
  queryKey: readonly unknown[];
  fetchPage: (page: number, perPage: number) => Promise<DeliveryPage>;
}) {
  const { t, language } = useI18n();
  const [page, setPage] = useState(1);
  const log = useQuery({
    queryKey: [...queryKey, page],
    queryFn: () => fetchPage(page, PER_PAGE),
    placeholderData: keepPreviousData,
    // The service sends every 2 s: follow the log while a delivery waits.
    refetchInterval: (query) => (query.state.data?.items.some((d) => d.status === "pending") ? 2_000 : false),
  });
  const pages = Math.max(1, Math.ceil((log.data?.total ?? 0) / PER_PAGE));
  return (
    <Card withBorder>
      <Stack gap="sm">
        <SectionHeader
          title={t("delivery.title")}
          onRefresh={() => void log.refetch()}
          isRefreshing={log.isFetching}
        />
        <ListState
          query={{ data: log.data?.items, error: log.error, isLoading: log.isLoading }}
          empty={<Text c="dimmed">{t("delivery.empty")}</Text>}
        >
          {(items) => (
            <DataTable
              minWidth={820}
              // Nothing in the rows takes focus: the scrolling area itself does, so keys can scroll it.
              scrollAreaProps={{
                viewportProps: { tabIndex: 0, role: "region", "aria-label": t("delivery.title") },
              }}
              data-testid="delivery-log"
              columns={[
                "delivery.event",
                "delivery.status",
                "delivery.attempts",
                "delivery.lastStatus",
                "delivery.lastError",
                "common.created",
                "delivery.next",
              ]}
            >
              {items.map((d) => (
                <Table.Tr key={d.id} data-testid="delivery-row">
                  <Table.Td ff="monospace" fz="sm">
                    {d.event_type}
                  </Table.Td>
                  <Table.Td>
                    <DeliveryStatus delivery={d} />
                  </Table.Td>
                  <Table.Td>{d.attempts}</Table.Td>
                  <Table.Td>{d.last_status ?? "—"}</Table.Td>
                  <Table.Td maw={280}>
                    {d.last_error ? (
                      <Tooltip label={d.last_error} multiline maw={360}>
                        <Text size="xs" lineClamp={2} c="var(--mantine-color-red-light-color)">
                          {d.last_error}
                        </Text>
                      </Tooltip>
                    ) : (
                      "—"
                    )}
                  </Table.Td>
                  <Table.Td fz="sm" style={{ whiteSpace: "nowrap" }}>
                    {formatDate(d.created_at, language)}
                  </Table.Td>
                  <Table.Td fz="sm" style={{ whiteSpace: "nowrap" }}>
                    {d.status === "delivered"
                      ? formatDate(d.delivered_at, language)
                      : d.status === "pending"
                        ? formatDate(d.next_attempt_at, language)
                        : "—"}
                  </Table.Td>
                </Table.Tr>
              ))}
            </DataTable>
          )}
        </ListState>
        {pages > 1 && <Pager total={pages} value={page} onChange={setPage} size="sm" />}
      </Stack>
    </Card>
  );
}
