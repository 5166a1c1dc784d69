// A delivery log (a webhook's or the admin's Telegram): newest first, paged, refreshed while
// anything waits, each row with its status, attempts, last HTTP status and last error.
import { Badge, Button, Card, Group, Pagination, Stack, Table, Text, Title, Tooltip } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import type { Delivery, DeliveryPage } from "../api/types.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { ErrorAlert } from "./errors.tsx";
import { formatDate } from "./format.ts";

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
        <Group justify="space-between">
          <Title order={3}>{t("delivery.title")}</Title>
          <Button size="xs" variant="subtle" loading={log.isFetching} onClick={() => void log.refetch()}>
            {t("common.refresh")}
          </Button>
        </Group>
        {log.error && <ErrorAlert error={log.error} />}
        {log.data?.items.length === 0 && <Text c="dimmed">{t("delivery.empty")}</Text>}
        {(log.data?.items.length ?? 0) > 0 && (
          <Table.ScrollContainer
            minWidth={820}
            // Nothing in the rows takes focus: the scrolling area itself does, so keys can scroll it.
            scrollAreaProps={{
              viewportProps: { tabIndex: 0, role: "region", "aria-label": t("delivery.title") },
            }}
          >
            <Table data-testid="delivery-log">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("delivery.event")}</Table.Th>
                  <Table.Th>{t("delivery.status")}</Table.Th>
                  <Table.Th>{t("delivery.attempts")}</Table.Th>
                  <Table.Th>{t("delivery.lastStatus")}</Table.Th>
                  <Table.Th>{t("delivery.lastError")}</Table.Th>
                  <Table.Th>{t("common.created")}</Table.Th>
                  <Table.Th>{t("delivery.next")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {log.data?.items.map((d) => (
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
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {pages > 1 && (
          <Pagination
            total={pages}
            value={page}
            onChange={setPage}
            size="sm"
            getControlProps={(control) => ({
              "aria-label":
                control === "next"
                  ? t("users.nextPage")
                  : control === "previous"
                    ? t("users.previousPage")
                    : control,
            })}
            getItemProps={(item) => ({ "aria-label": t("users.pageN", { n: item }) })}
          />
        )}
      </Stack>
    </Card>
  );
}
