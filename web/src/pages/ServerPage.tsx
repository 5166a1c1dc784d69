// One server: status and actions, what its core reports now (uptime, memory, traffic per inbound),
// its traffic over time (the usage history), and its inbounds (made from templates; activate, deactivate, delete).
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Group,
  SimpleGrid,
  Skeleton,
  Stack,
  Switch,
  Table,
  Text,
  Title,
  VisuallyHidden,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import { inboundsQuery } from "../api/inbounds.ts";
import type { Inbound, Server } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { TrafficChart } from "../charts/TrafficChart.tsx";
import { type HistoryRange, UsageHistoryCard } from "../charts/UsageHistoryCard.tsx";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { followLink, href, navigate } from "../router.tsx";
import { AuditLink } from "../ui/AuditLink.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { formatBytes, formatDate, formatDuration } from "../ui/format.ts";
import { PageLoader } from "../ui/PageLoader.tsx";
import { ServerStatusBadge, SyncBadge } from "../ui/StatusBadge.tsx";
import { ServerActions, STATUS_POLL_MS } from "./ServersPage.tsx";
import { InboundFormModal } from "./servers/InboundForm.tsx";
import { ServerFormModal } from "./servers/ServerForm.tsx";

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600}>{value}</Text>
    </div>
  );
}

function StatsCard({ server }: { server: Server }) {
  const { t, language } = useI18n();
  const stats = useQuery({
    queryKey: ["servers", server.id, "stats"],
    queryFn: () => unwrap(api.GET("/api/servers/{id}/stats", { params: { path: { id: server.id } } })),
    refetchInterval: 10_000,
    retry: false,
  });
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between">
          <Title order={3}>{t("stats.title")}</Title>
          <Button size="xs" variant="subtle" loading={stats.isFetching} onClick={() => void stats.refetch()}>
            {t("common.refresh")}
          </Button>
        </Group>
        {stats.error && <ErrorAlert error={stats.error} />}
        {stats.isLoading && <Skeleton h={120} />}
        {stats.data && (
          <>
            <SimpleGrid cols={{ base: 2, sm: 4 }}>
              <Stat label={t("stats.uptime")} value={formatDuration(stats.data.uptime_seconds)} />
              <Stat label={t("stats.memory")} value={formatBytes(stats.data.memory.alloc_bytes)} />
              <Stat label={t("stats.uplink")} value={formatBytes(stats.data.traffic.uplink_bytes)} />
              <Stat label={t("stats.downlink")} value={formatBytes(stats.data.traffic.downlink_bytes)} />
            </SimpleGrid>
            <Text size="xs" c="dimmed">
              {t("stats.collectedAt", {
                at: formatDate(stats.data.collected_at, language),
                users: stats.data.users.length,
              })}
            </Text>
            {stats.data.inbounds.some((i) => i.uplink_bytes + i.downlink_bytes > 0) && (
              <TrafficChart
                rows={stats.data.inbounds.map((i) => ({
                  name: i.tag,
                  up: i.uplink_bytes,
                  down: i.downlink_bytes,
                }))}
              />
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

function TrafficHistory({ server }: { server: Server }) {
  const t = useT();
  const load = (range: HistoryRange) =>
    unwrap(api.GET("/api/usage", { params: { query: { ...range, server_id: server.id } } })).then(
      (fleet) => fleet.servers.find((s) => s.server_id === server.id)?.buckets ?? [],
    );
  return (
    <Card withBorder>
      <UsageHistoryCard title={t("history.serverTitle")} queryKey={["servers", server.id]} load={load} />
    </Card>
  );
}

function InboundRow({ server, inbound, canWrite }: { server: Server; inbound: Inbound; canWrite: boolean }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const path = { server_id: server.id, inbound_id: inbound.id };
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["servers", server.id, "inbounds"] });
  const setActive = useMutation({
    mutationFn: (isActive: boolean) =>
      unwrap(
        api.PUT("/api/servers/{server_id}/inbounds/{inbound_id}", {
          params: { path },
          body: { is_active: isActive },
        }),
      ),
    onSuccess: refresh,
    onError: notifyError,
  });
  const remove = useMutation({
    mutationFn: () =>
      unwrap(api.DELETE("/api/servers/{server_id}/inbounds/{inbound_id}", { params: { path } })),
    onSuccess: () => {
      void refresh();
      notifyDone(t("inbound.deleted"));
    },
    onError: notifyError,
  });
  const [isEditing, setEditing] = useState(false);
  return (
    <Table.Tr data-testid="inbound-row">
      <Table.Td ff="monospace">{inbound.tag}</Table.Td>
      <Table.Td>{inbound.template_name}</Table.Td>
      <Table.Td>{inbound.port_override}</Table.Td>
      <Table.Td>
        <SyncBadge state={inbound.sync_state} error={inbound.sync_error} />
      </Table.Td>
      <Table.Td>
        {canWrite ? (
          <Switch
            aria-label={t("inbound.active", { tag: inbound.tag })}
            checked={inbound.is_active}
            disabled={setActive.isPending}
            onChange={(e) => setActive.mutate(e.currentTarget.checked)}
          />
        ) : (
          <Badge color={inbound.is_active ? "teal" : "gray"} variant="light">
            {inbound.is_active ? t("common.active") : t("common.inactive")}
          </Badge>
        )}
      </Table.Td>
      {canWrite && (
        <Table.Td>
          <Group gap={4} wrap="nowrap">
            <Button
              size="xs"
              variant="subtle"
              onClick={() => setEditing(true)}
              aria-label={t("inbound.edit", { tag: inbound.tag })}
            >
              {t("common.edit")}
            </Button>
            <Button
              size="xs"
              color="red"
              variant="subtle"
              loading={remove.isPending}
              onClick={() => confirm(t("inbound.deleteConfirm", { tag: inbound.tag }), () => remove.mutate())}
            >
              {t("common.delete")}
            </Button>
          </Group>
          {confirmModal}
          {isEditing && (
            <InboundFormModal server={server} inbound={inbound} onClose={() => setEditing(false)} />
          )}
        </Table.Td>
      )}
    </Table.Tr>
  );
}

function Inbounds({ server }: { server: Server }) {
  const t = useT();
  const can = useCan();
  const canWrite = can("inbounds.write");
  const [isCreating, setCreating] = useState(false);
  const inbounds = useQuery({ ...inboundsQuery(server.id), refetchInterval: STATUS_POLL_MS });
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Group justify="space-between">
          <Title order={3}>{t("inbound.title")}</Title>
          {canWrite && (
            <Button size="xs" onClick={() => setCreating(true)}>
              {t("inbound.new")}
            </Button>
          )}
        </Group>
        {inbounds.error && <ErrorAlert error={inbounds.error} />}
        {inbounds.data?.length === 0 && <Text c="dimmed">{t("inbound.empty")}</Text>}
        {(inbounds.data?.length ?? 0) > 0 && (
          <Table.ScrollContainer minWidth={520}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("inbound.tag")}</Table.Th>
                  <Table.Th>{t("inbound.template")}</Table.Th>
                  <Table.Th>{t("inbound.port")}</Table.Th>
                  <Table.Th>{t("inbound.sync")}</Table.Th>
                  <Table.Th>{t("common.active")}</Table.Th>
                  {canWrite && (
                    <Table.Th>
                      <VisuallyHidden>{t("admins.actions")}</VisuallyHidden>
                    </Table.Th>
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {inbounds.data?.map((inbound) => (
                  <InboundRow key={inbound.id} server={server} inbound={inbound} canWrite={canWrite} />
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </Stack>
      {isCreating && <InboundFormModal server={server} onClose={() => setCreating(false)} />}
    </Card>
  );
}

export function ServerPage({ id }: { id: string }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const [isEditing, setEditing] = useState(false);
  const server = useQuery({
    queryKey: ["servers", id],
    queryFn: () => unwrap(api.GET("/api/servers/{id}", { params: { path: { id } } })),
    refetchInterval: STATUS_POLL_MS,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/servers/{id}", { params: { path: { id } } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ["servers", id] });
      await queryClient.invalidateQueries({ queryKey: ["servers"] });
      navigate("/servers");
    },
    onError: notifyError,
  });
  if (server.isLoading) return <PageLoader />;
  if (server.data === undefined) return <ErrorAlert error={server.error} />;
  return (
    <ServerView
      server={server.data}
      onEdit={() => setEditing(true)}
      onDelete={() =>
        confirm(t("server.deleteConfirm", { name: server.data?.name ?? "" }), () => remove.mutate())
      }
    >
      {isEditing && <ServerFormModal server={server.data} onClose={() => setEditing(false)} />}
      {confirmModal}
    </ServerView>
  );
}

function ServerView({
  server,
  onEdit,
  onDelete,
  children,
}: {
  server: Server;
  onEdit: () => void;
  onDelete: () => void;
  children: React.ReactNode;
}) {
  const t = useT();
  const can = useCan();
  return (
    <Stack>
      <div>
        <Anchor size="sm" href={href("/servers")} onClick={(e) => followLink(e, "/servers")}>
          ← {t("nav.servers")}
        </Anchor>
        <Group justify="space-between">
          <Group gap="sm">
            <Title order={2}>{server.name}</Title>
            <ServerStatusBadge status={server.status} />
          </Group>
          <Group gap="xs">
            {can("audit.read") && <AuditLink target={server.id} />}
            {can("servers.write") && (
              <>
                <ServerActions server={server} />
                <Button size="xs" variant="default" onClick={onEdit}>
                  {t("common.edit")}
                </Button>
                <Button size="xs" color="red" variant="light" onClick={onDelete}>
                  {t("common.delete")}
                </Button>
              </>
            )}
          </Group>
        </Group>
        <Text size="sm" c="dimmed">
          {server.hostname} · {t("server.api")} {server.grpc_hostname}:{server.grpc_port} ·{" "}
          <span data-testid="server-core">
            {server.core === null
              ? t("server.coreUnknown")
              : `${server.core} ${server.core_version ?? ""}`.trim()}
          </span>
        </Text>
      </div>
      {server.last_error && (
        <Alert color="red" title={t("server.lastError")}>
          {server.last_error}
        </Alert>
      )}
      <Inbounds server={server} />
      <StatsCard server={server} />
      <TrafficHistory server={server} />
      {children}
    </Stack>
  );
}
