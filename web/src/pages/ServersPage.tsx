// Servers at a glance: status (kept current by the service's reconciler; polled here), core flavor
// and version, last error, how many inbounds wait or failed to sync; test and sync from the card.
import { Alert, Anchor, Button, Card, Group, SimpleGrid, Skeleton, Stack, Text, Title } from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import { inboundsQuery, serversQuery } from "../api/inbounds.ts";
import type { Server } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { followLink, href } from "../router.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { ServerStatusBadge } from "../ui/StatusBadge.tsx";
import { ServerFormModal } from "./servers/ServerForm.tsx";

export const STATUS_POLL_MS = 5_000;

function useServerActions(server: Server) {
  const t = useT();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["servers"] });
  const test = useMutation({
    mutationFn: () => unwrap(api.POST("/api/servers/{id}/test", { params: { path: { id: server.id } } })),
    onSuccess: (result) => {
      void refresh();
      if (result.connected)
        notifyDone(t("server.testOk", { core: result.core ?? "?", ms: result.latency_ms ?? 0 }));
      else notifyError(new Error(t("server.testFailed", { error: result.error ?? "" })));
    },
    onError: notifyError,
  });
  const sync = useMutation({
    mutationFn: () => unwrap(api.POST("/api/servers/{id}/sync", { params: { path: { id: server.id } } })),
    onSuccess: (report) => {
      void refresh();
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
    onError: notifyError,
  });
  return { test, sync };
}

function SyncSummary({ server }: { server: Server }) {
  const t = useT();
  const inbounds = useQuery(inboundsQuery(server.id));
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
          <Anchor
            href={href(`/servers/${server.id}`)}
            onClick={(e) => followLink(e, `/servers/${server.id}`)}
            fw={600}
            size="lg"
          >
            {server.name}
          </Anchor>
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
        {server.last_error && (
          <Alert color="red" p="xs" data-testid="server-last-error">
            <Text size="xs">{server.last_error}</Text>
          </Alert>
        )}
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
  const servers = useQuery({ ...serversQuery, refetchInterval: STATUS_POLL_MS });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t("nav.servers")}</Title>
        {can("servers.write") && <Button onClick={() => setCreating(true)}>{t("server.new")}</Button>}
      </Group>
      {servers.error && <ErrorAlert error={servers.error} />}
      {servers.isLoading && <Skeleton h={160} />}
      {servers.data?.length === 0 && (
        <Text c="dimmed" ta="center" py="lg">
          {t("server.empty")}
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        {servers.data?.map((server) => (
          <ServerCard key={server.id} server={server} canWrite={can("servers.write")} />
        ))}
      </SimpleGrid>
      {isCreating && <ServerFormModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
