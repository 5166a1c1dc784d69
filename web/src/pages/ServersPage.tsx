// Servers at a glance: status (kept current by the service's reconciler; polled here), core flavor
// and version, last error, how many inbounds wait or failed to sync; test and sync from the card.

import { Button, Card, Group, SimpleGrid, Stack, Text } from "@mantine/core";
import { useState } from "react";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import { serversApi, useInbounds, useServers } from "../api/servers.ts";
import type { Server } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { CoreProblem, ErrorAlert, notifyCoreFailure, notifyDone, notifyError } from "../ui/errors.tsx";
import { ListState, PageHeader } from "../ui/Scaffold.tsx";
import { ServerStatusBadge } from "../ui/StatusBadge.tsx";
import { ServerFormModal } from "./servers/ServerForm.tsx";

function useServerActions(server: Server) {
  const t = useT();
  const invalidates = [keys.servers.all];
  const test = useChange(() => serversApi.test(server.id), {
    invalidates,
    onSuccess: (result) => {
      if (result.connected)
        notifyDone(t("server.testOk", { core: result.core ?? "?", ms: result.latency_ms ?? 0 }));
      else notifyCoreFailure(result.error ?? "");
    },
  });
  const sync = useChange(() => serversApi.sync(server.id), {
    invalidates,
    onSuccess: (report) => {
      if ("mode" in report) {
        const message = t("server.syncReport", {
          inbounds: report.inbounds,
          users: report.users,
          removed: report.removed,
          ms: report.duration_ms,
        });
        if (report.errors.length > 0)
          notifyError(
            new Error(
              `${message}; ${report.errors.map((e) => `${e.tag} ${e.email ?? ""}: ${e.message}`).join("; ")}`,
            ),
          );
        else notifyDone(message);
      } else notifyDone(report.detail);
    },
  });
  return { test, sync };
}

function SyncSummary({ server }: { server: Server }) {
  const t = useT();
  const inbounds = useInbounds(server.id);
  if (inbounds.error) return <ErrorAlert error={inbounds.error} />;
  if (inbounds.data === undefined) return null;
  const pending = inbounds.data.filter((i) => i.sync_state === "pending").length;
  const failed = inbounds.data.filter((i) => i.sync_state === "error").length;
  return (
    <Text
      size="sm"
      c={
        failed > 0
          ? "var(--mantine-color-red-light-color)"
          : pending > 0
            ? "var(--mantine-color-yellow-light-color)"
            : "dimmed"
      }
      data-testid="sync-summary"
    >
      {t("server.inboundSummary", { count: inbounds.data.length, pending, failed })}
    </Text>
  );
}

/** Test (connect and detect the core) and Sync now (a full reconcile), with what each found. */
export function ServerActions({ server }: { server: Server }) {
  const t = useT();
  const { test, sync } = useServerActions(server);
  return (
    <>
      <Button size="xs" variant="light" loading={test.isPending} onClick={() => test.mutate()}>
        {t("server.test")}
      </Button>
      <Button size="xs" variant="light" loading={sync.isPending} onClick={() => sync.mutate()}>
        {t("server.sync")}
      </Button>
    </>
  );
}

function ServerCard({ server, canWrite }: { server: Server; canWrite: boolean }) {
  const t = useT();
  return (
    <Card withBorder data-testid="server-card">
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap">
          <Link to={`/servers/${server.id}`} fw={600} size="lg">
            {server.name}
          </Link>
          <ServerStatusBadge status={server.status} />
        </Group>
        <Text size="sm" c="dimmed">
          {server.hostname} · {t("server.api")} {server.grpc_hostname}:{server.grpc_port}
        </Text>
        <Text size="sm">
          {server.core === null
            ? t("server.coreUnknown")
            : `${server.core} ${server.core_version ?? ""}`.trim()}
        </Text>
        <SyncSummary server={server} />
        {server.last_error && <CoreProblem raw={server.last_error} />}
        {canWrite && (
          <Group gap="xs">
            <ServerActions server={server} />
          </Group>
        )}
      </Stack>
    </Card>
  );
}

export function ServersPage() {
  const t = useT();
  const [isCreating, setCreating] = useState(false);
  const can = useCan();
  const servers = useServers({ poll: true });
  return (
    <Stack>
      <PageHeader title={t("nav.servers")}>
        {can("servers.write") && <Button onClick={() => setCreating(true)}>{t("server.new")}</Button>}
      </PageHeader>
      <ListState query={servers} empty={t("server.empty")} skeleton={160}>
        {(list) => (
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {list.map((server) => (
              <ServerCard key={server.id} server={server} canWrite={can("servers.write")} />
            ))}
          </SimpleGrid>
        )}
      </ListState>
      {isCreating && <ServerFormModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
