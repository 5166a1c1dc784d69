// One server: status and actions, what its core reports now (uptime, memory, traffic per inbound),
// its traffic over time (the usage history), and its inbounds (made from templates; activate, deactivate, delete)
// with each inbound's hosts opened under its row.

import {
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
} from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { keys } from "../api/keys.ts";
import { useChange, useRemoval } from "../api/mutation.ts";
import {
  inboundsApi,
  inboundsQuery,
  STATUS_POLL_MS,
  serverHistory,
  serversApi,
  useServer,
  useServerStats,
} from "../api/servers.ts";
import type { Inbound, Server } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { TrafficChart } from "../charts/TrafficChart.tsx";
import { UsageHistoryCard } from "../charts/UsageHistoryCard.tsx";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { AuditLink } from "../ui/AuditLink.tsx";
import { ConfirmButton, useConfirm } from "../ui/Confirm.tsx";
import { CoreProblem, ErrorAlert } from "../ui/errors.tsx";
import { formatDate, formatDuration } from "../ui/format.ts";
import { Bytes, Iso } from "../ui/Num.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";
import { DataTable, DetailHeader, ListState, SectionHeader } from "../ui/Scaffold.tsx";
import { ServerStatusBadge, SyncBadge } from "../ui/StatusBadge.tsx";
import { ServerActions } from "./ServersPage.tsx";
import { InboundFormModal } from "./servers/InboundForm.tsx";
import { InboundHosts } from "./servers/InboundHosts.tsx";
import { NodeSection } from "./servers/NodeSection.tsx";
import { ServerFormModal } from "./servers/ServerForm.tsx";

function Stat({ label, value }: { label: string; value: React.ReactNode }) {
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
  const stats = useServerStats(server.id);
  return (
    <Card withBorder>
      <Stack gap="sm">
        <SectionHeader
          title={t("stats.title")}
          onRefresh={() => void stats.refetch()}
          isRefreshing={stats.isFetching}
        />
        {/* The core's own words are in the server's last error above: said once, not three times. */}
        {stats.error &&
          (server.last_error ? (
            <Text size="sm" c="dimmed" data-testid="stats-unavailable">
              {t("stats.unavailable")}
            </Text>
          ) : (
            <ErrorAlert error={stats.error} />
          ))}
        {stats.isLoading && <Skeleton h={120} />}
        {stats.data && (
          <>
            <SimpleGrid cols={{ base: 2, sm: 4 }}>
              <Stat
                label={t("stats.uptime")}
                value={<Iso>{formatDuration(stats.data.uptime_seconds)}</Iso>}
              />
              <Stat label={t("stats.memory")} value={<Bytes value={stats.data.memory.alloc_bytes} />} />
              <Stat label={t("stats.uplink")} value={<Bytes value={stats.data.traffic.uplink_bytes} />} />
              <Stat label={t("stats.downlink")} value={<Bytes value={stats.data.traffic.downlink_bytes} />} />
            </SimpleGrid>
            <Text size="xs" c="dimmed">
              {t("stats.sinceCollection")}
            </Text>
            <Text size="xs" c="dimmed">
              {t("stats.collectedAt", {
                at: formatDate(stats.data.collected_at, language),
                users: stats.data.users.length,
              })}
            </Text>
            {stats.data.inbounds.some((i) => i.uplink_bytes + i.downlink_bytes > 0) && (
              <TrafficChart items={stats.data.inbounds} name={(i) => i.tag} />
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

function InboundRow({ server, inbound, canWrite }: { server: Server; inbound: Inbound; canWrite: boolean }) {
  const t = useT();
  const path = { server_id: server.id, inbound_id: inbound.id };
  const invalidates = [keys.servers.inbounds(server.id)];
  const setActive = useChange((isActive: boolean) => inboundsApi.update(path, { is_active: isActive }), {
    invalidates,
  });
  const remove = useChange(() => inboundsApi.remove(path), { invalidates, done: t("inbound.deleted") });
  const [isEditing, setEditing] = useState(false);
  const [showsHosts, setShowsHosts] = useState(false);
  const hostsId = `hosts-${inbound.id}`;
  return (
    <>
      <Table.Tr data-testid="inbound-row">
        <Table.Td ff="monospace">{inbound.tag}</Table.Td>
        <Table.Td>{inbound.template_name}</Table.Td>
        <Table.Td>{inbound.port_override}</Table.Td>
        <Table.Td>
          <Button
            size="xs"
            variant="subtle"
            aria-expanded={showsHosts}
            aria-controls={showsHosts ? hostsId : undefined}
            aria-label={t("hosts.toggle", { tag: inbound.tag })}
            onClick={() => setShowsHosts((shown) => !shown)}
          >
            {t("hosts.title")}
          </Button>
        </Table.Td>
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
              <ConfirmButton
                size="xs"
                variant="subtle"
                change={remove}
                question={t("inbound.deleteConfirm", { tag: inbound.tag })}
              >
                {t("common.delete")}
              </ConfirmButton>
            </Group>
            {isEditing && (
              <InboundFormModal server={server} inbound={inbound} onClose={() => setEditing(false)} />
            )}
          </Table.Td>
        )}
      </Table.Tr>
      {showsHosts && (
        <Table.Tr id={hostsId}>
          <Table.Td colSpan={canWrite ? 7 : 6}>
            <InboundHosts server={server} inbound={inbound} canWrite={canWrite} />
          </Table.Td>
        </Table.Tr>
      )}
    </>
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
        <ListState query={inbounds} empty={<Text c="dimmed">{t("inbound.empty")}</Text>} skeleton={60}>
          {(list) => (
            <DataTable
              minWidth={600}
              columns={[
                "inbound.tag",
                "inbound.template",
                "inbound.port",
                "hosts.title",
                "inbound.sync",
                "common.active",
              ]}
              actions={canWrite}
            >
              {list.map((inbound) => (
                <InboundRow key={inbound.id} server={server} inbound={inbound} canWrite={canWrite} />
              ))}
            </DataTable>
          )}
        </ListState>
      </Stack>
      {isCreating && <InboundFormModal server={server} onClose={() => setCreating(false)} />}
    </Card>
  );
}

export function ServerPage({ id }: { id: string }) {
  const t = useT();
  const [confirm, confirmModal] = useConfirm();
  const [isEditing, setEditing] = useState(false);
  const server = useServer(id);
  const remove = useRemoval(() => serversApi.remove(id), keys.servers, id);
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
        <DetailHeader
          back={{ to: "/servers", label: t("nav.servers") }}
          title={server.name}
          badge={<ServerStatusBadge status={server.status} />}
        >
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
        </DetailHeader>
        <Text size="sm" c="dimmed">
          {server.hostname} · {t(`server.connection.${server.connection}`)} · {t("server.api")}{" "}
          {server.grpc_hostname}:{server.grpc_port} ·{" "}
          <span data-testid="server-core">
            {server.core === null
              ? t("server.coreUnknown")
              : `${server.core} ${server.core_version ?? ""}`.trim()}
          </span>
        </Text>
      </div>
      {server.last_error && <CoreProblem raw={server.last_error} title={t("server.lastError")} />}
      <NodeSection server={server} />
      <Inbounds server={server} />
      <StatsCard server={server} />
      <UsageHistoryCard
        title={t("history.serverTitle")}
        queryKey={keys.servers.usage(server.id)}
        load={(range) => serverHistory(server.id, range)}
      />
      {children}
    </Stack>
  );
}
