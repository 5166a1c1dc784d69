// The home page operators land on: the fleet at a glance from one call (GET /api/overview: every
// server with its connection and its agent's report, users per status, online now) and the fleet's
// traffic today and over 7 days (GET /api/usage by day). A server offline or in error is red and
// counted in an alert at the top: a problem to act on, never a grey row.

import { Alert, Badge, Card, Group, SimpleGrid, Skeleton, Stack, Table, Text, Title } from "@mantine/core";
import { lazy, Suspense } from "react";
import { useFleetTraffic, useOverview } from "../api/nodes.ts";
import type { Overview } from "../api/types.ts";
import type { HistoryRow } from "../charts/HistoryBars.tsx";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { formatDate, formatDuration } from "../ui/format.ts";
import { Iso, UpDown } from "../ui/Num.tsx";
import { DataTable, PageHeader } from "../ui/Scaffold.tsx";
import { ServerStatusBadge } from "../ui/StatusBadge.tsx";
import { relativeTime, USER_STATUSES, UserStatusBadge } from "./users/lifecycle.tsx";

const HistoryBars = lazy(() => import("../charts/HistoryBars.tsx").then((m) => ({ default: m.HistoryBars })));

type FleetServer = Overview["servers"][number];

const TRAFFIC_DAYS = 7;

function Figure({ label, children, testId }: { label: string; children: React.ReactNode; testId: string }) {
  return (
    <Card withBorder padding="sm">
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={700} size="xl" data-testid={testId}>
        {children}
      </Text>
    </Card>
  );
}

const isDown = (server: FleetServer) => server.status === "offline" || server.status === "error";

/** What the agent says: unreachable (red), the core stopped (red), else running; "—" for direct. */
function AgentState({ server }: { server: FleetServer }) {
  const t = useT();
  if (server.connection === "direct")
    return (
      <Text size="sm" c="dimmed">
        —
      </Text>
    );
  const agent = server.agent;
  const state =
    agent === null || !agent.reachable ? "unreachable" : agent.core_running ? "running" : "stopped";
  return (
    <Badge
      variant="light"
      color={state === "running" ? "teal" : "red"}
      data-testid="agent-state"
      data-state={state}
    >
      {t(`node.agent.${state}`)}
    </Badge>
  );
}

function CoreCell({ server }: { server: FleetServer }) {
  const t = useT();
  const agent = server.agent;
  const flavor = agent?.core_flavor ?? server.core;
  const version = agent?.core_version;
  return (
    <Text size="sm" data-testid="fleet-core">
      {flavor === null ? "—" : `${flavor}${version ? ` ${version}` : ""}`}
      {agent?.agent_version ? (
        <Text span size="xs" c="dimmed" display="block">
          {t("home.agentVersion", { version: agent.agent_version })}
        </Text>
      ) : null}
    </Text>
  );
}

function ServerRow({ server }: { server: FleetServer }) {
  const { t, language } = useI18n();
  const agent = server.agent;
  return (
    <Table.Tr data-testid="fleet-server" data-down={isDown(server)}>
      <Table.Td>
        <Link to={`/servers/${server.id}`}>{server.name}</Link>
      </Table.Td>
      <Table.Td>
        <Stack gap={2}>
          <ServerStatusBadge status={server.status} />
          {isDown(server) && server.offline_since !== null && (
            <Text size="xs" c="var(--mantine-color-red-light-color)" data-testid="offline-since">
              {t("home.offlineSince", { since: relativeTime(server.offline_since, language) })}
            </Text>
          )}
        </Stack>
      </Table.Td>
      <Table.Td>
        <Badge variant="outline" color="gray" data-testid="fleet-connection">
          {t(`server.connection.${server.connection}`)}
        </Badge>
      </Table.Td>
      <Table.Td>
        <AgentState server={server} />
      </Table.Td>
      <Table.Td>
        <CoreCell server={server} />
      </Table.Td>
      <Table.Td data-testid="fleet-uptime">
        {agent?.core_uptime_seconds == null ? "—" : <Iso>{formatDuration(agent.core_uptime_seconds)}</Iso>}
      </Table.Td>
      <Table.Td data-testid="fleet-restarts">{agent?.restarts ?? "—"}</Table.Td>
      <Table.Td>
        <Text size="sm">
          {server.last_seen_at === null ? t("home.neverSeen") : formatDate(server.last_seen_at, language)}
        </Text>
      </Table.Td>
    </Table.Tr>
  );
}

function Servers({ servers }: { servers: FleetServer[] }) {
  const t = useT();
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={3}>{t("nav.servers")}</Title>
        {servers.length === 0 ? (
          <Text c="dimmed" data-testid="empty-state">
            {t("home.noServers")} <Link to="/servers">{t("server.new")}</Link>
          </Text>
        ) : (
          <DataTable
            minWidth={820}
            columns={[
              "server.name",
              "home.status",
              "server.connection",
              "node.agent",
              "home.core",
              "stats.uptime",
              "home.restarts",
              "home.lastSeen",
            ]}
          >
            {servers.map((server) => (
              <ServerRow key={server.id} server={server} />
            ))}
          </DataTable>
        )}
      </Stack>
    </Card>
  );
}

function Users({ overview }: { overview: Overview }) {
  const t = useT();
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={3}>{t("nav.users")}</Title>
        <Group gap="md" data-testid="users-by-status">
          {USER_STATUSES.map((status) => (
            <Group key={status} gap={6} data-testid={`users-${status}`}>
              <UserStatusBadge status={status} />
              <Text fw={600}>{overview.users.by_status[status]}</Text>
            </Group>
          ))}
        </Group>
      </Stack>
    </Card>
  );
}

function Traffic() {
  const { t, language } = useI18n();
  const traffic = useFleetTraffic(TRAFFIC_DAYS);
  const days = traffic.data ?? [];
  const today = days.at(-1);
  const up = days.reduce((sum, d) => sum + d.uplink_bytes, 0);
  const down = days.reduce((sum, d) => sum + d.downlink_bytes, 0);
  const rows: HistoryRow[] = days.map((d) => ({
    label: new Date(d.start).toLocaleDateString(language, {
      day: "numeric",
      month: "short",
      timeZone: "UTC",
    }),
    up: d.uplink_bytes,
    down: d.downlink_bytes,
  }));
  return (
    <Card withBorder>
      <Stack gap="xs" data-testid="fleet-traffic">
        <Title order={3}>{t("home.traffic")}</Title>
        {traffic.error && <ErrorAlert error={traffic.error} />}
        {traffic.isLoading && <Skeleton h={220} />}
        {today !== undefined && (
          <>
            <Text size="sm" data-testid="traffic-today">
              {t("home.today")}: <UpDown up={today.uplink_bytes} down={today.downlink_bytes} />
            </Text>
            <Text size="sm" data-testid="traffic-week">
              {t("home.lastDays", { days: TRAFFIC_DAYS })}: <UpDown up={up} down={down} />
            </Text>
            {up + down === 0 ? (
              <Text size="sm" c="dimmed">
                {t("history.none")}
              </Text>
            ) : (
              <Suspense fallback={<Skeleton h={220} />}>
                <HistoryBars rows={rows} upLabel={t("usage.uplink")} downLabel={t("usage.downlink")} />
              </Suspense>
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

function Summary({ overview }: { overview: Overview }) {
  const t = useT();
  const online = overview.servers.filter((s) => s.status === "online").length;
  return (
    <SimpleGrid cols={{ base: 2, sm: 4 }}>
      <Figure label={t("home.serversOnline")} testId="servers-online">
        {t("home.ofTotal", { count: online, total: overview.servers.length })}
      </Figure>
      <Figure label={t("home.usersTotal")} testId="users-total">
        {overview.users.total}
      </Figure>
      <Figure label={t("home.onlineUsers")} testId="online-users">
        {overview.online.users}
      </Figure>
      <Figure label={t("home.onlineAddresses")} testId="online-addresses">
        {overview.online.addresses}
      </Figure>
    </SimpleGrid>
  );
}

export function HomePage() {
  const { t } = useI18n();
  const overview = useOverview();
  const data = overview.data;
  const down = data?.servers.filter(isDown) ?? [];
  return (
    <Stack>
      <PageHeader title={t("home.title")} hint={t("home.hint")} />
      {overview.error && <ErrorAlert error={overview.error} />}
      {overview.isLoading && <Skeleton h={240} />}
      {data !== undefined && (
        <>
          {down.length > 0 && (
            <Alert color="red" title={t("home.downTitle", { count: down.length })} data-testid="servers-down">
              {down.map((s) => s.name).join(", ")}
            </Alert>
          )}
          <Summary overview={data} />
          <Text size="xs" c="dimmed">
            {t("home.onlineWindow", { minutes: data.online.window_minutes })}
            {data.online.unreachable_server_ids.length > 0 &&
              ` ${t("home.onlineIncomplete", { count: data.online.unreachable_server_ids.length })}`}
          </Text>
          <Servers servers={data.servers} />
          <Users overview={data} />
        </>
      )}
      <Traffic />
    </Stack>
  );
}
