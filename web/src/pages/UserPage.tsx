// One user: their fields, their subscription URL, every grant with its share link (copy, QR), grant
// on any inbound in two clicks (open the picker, pick), revoke, usage per server and over time, delete.
import {
  ActionIcon,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  Select,
  SimpleGrid,
  Skeleton,
  Stack,
  Text,
  Title,
  Tooltip,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, unwrap } from "../api/client.ts";
import { useAllInbounds } from "../api/inbounds.ts";
import type { Access, Usage, UsageSeries, User } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { TrafficChart } from "../charts/TrafficChart.tsx";
import { type HistoryRange, UsageHistoryCard } from "../charts/UsageHistoryCard.tsx";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { followLink, href, navigate } from "../router.tsx";
import { AuditLink } from "../ui/AuditLink.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { Copy } from "../ui/Copy.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { formatBytes } from "../ui/format.ts";
import { QrIcon, TrashIcon } from "../ui/icons.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";
import { QrCode } from "../ui/QrCode.tsx";
import { SyncBadge } from "../ui/StatusBadge.tsx";
import { applyFieldErrors, toUserInput, UserFields, type UserFormValues } from "./users/CreateUser.tsx";
import { LimitsCard } from "./users/LimitsCard.tsx";

export function QrButton({ value, title }: { value: string; title: string }) {
  const t = useT();
  const [opened, setOpened] = useState(false);
  return (
    <>
      <Tooltip label={t("links.showQr")}>
        <ActionIcon
          variant="subtle"
          color="gray"
          aria-label={t("links.showQr")}
          onClick={() => setOpened(true)}
        >
          <QrIcon />
        </ActionIcon>
      </Tooltip>
      <Modal opened={opened} onClose={() => setOpened(false)} title={title} centered>
        <Stack align="center">
          <QrCode value={value} label={t("links.qrOf", { name: title })} size={280} />
          <Code block w="100%" style={{ wordBreak: "break-all", whiteSpace: "pre-wrap" }}>
            {value}
          </Code>
        </Stack>
      </Modal>
    </>
  );
}

function UserForm({ user, canEdit }: { user: User; canEdit: boolean }) {
  const t = useT();
  const queryClient = useQueryClient();
  const form = useForm<UserFormValues>({
    initialValues: { name: user.name, comment: user.comment ?? "", telegram_id: user.telegram_id ?? "" },
  });
  // The stored user changed (saved here, or refetched): show it, with nothing left dirty.
  useEffect(() => {
    form.setValues({ name: user.name, comment: user.comment ?? "", telegram_id: user.telegram_id ?? "" });
    form.resetDirty();
  }, [user.updated_at]);
  const save = useMutation({
    mutationFn: (values: typeof form.values) =>
      unwrap(api.PUT("/api/users/{id}", { params: { path: { id: user.id } }, body: toUserInput(values) })),
    onSuccess: (saved) => {
      queryClient.setQueryData(["users", saved.id], saved);
      void queryClient.invalidateQueries({ queryKey: ["users", "page"] });
      notifyDone(t("common.saved"));
    },
    onError: (error) => {
      applyFieldErrors(form, error);
      notifyError(error);
    },
  });
  return (
    <Card withBorder>
      <form onSubmit={form.onSubmit((values) => save.mutate(values))}>
        <Stack>
          <UserFields form={form} readOnly={!canEdit} />
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit" loading={save.isPending} disabled={!form.isDirty()}>
                {t("common.save")}
              </Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

function GrantPicker({ user, granted }: { user: User; granted: Set<string> }) {
  const t = useT();
  const queryClient = useQueryClient();
  const { choices, isLoading, error } = useAllInbounds();
  const grant = useMutation({
    mutationFn: (inboundId: string) => {
      const picked = choices.find((c) => c.inbound.id === inboundId);
      if (picked === undefined) throw new Error(`unknown inbound ${inboundId}`);
      return unwrap(
        api.POST("/api/servers/{server_id}/inbounds/{inbound_id}/users", {
          params: { path: { server_id: picked.server.id, inbound_id: inboundId } },
          body: { user_id: user.id },
        }),
      );
    },
    onSuccess: (access) => {
      void queryClient.invalidateQueries({ queryKey: ["access", user.id] });
      if (access.sync_state !== "synced") notifyError(new Error(access.sync_error ?? t("sync.pending")));
    },
    onError: notifyError,
  });
  const available = choices.filter((c) => !granted.has(c.inbound.id));
  return (
    <>
      {error !== undefined && <ErrorAlert error={error} />}
      <Select
        label={t("grants.add")}
        placeholder={isLoading ? t("common.loading") : t("grants.pickInbound")}
        data={available.map((c) => ({ value: c.inbound.id, label: c.label }))}
        value={null}
        onChange={(value) => value !== null && grant.mutate(value)}
        disabled={grant.isPending}
        searchable
        nothingFoundMessage={t("grants.noInbounds")}
        data-testid="grant-picker"
      />
    </>
  );
}

function GrantCard({
  access,
  serverId,
  onRevoke,
}: {
  access: Access;
  serverId: string | undefined;
  onRevoke: (() => void) | undefined;
}) {
  const t = useT();
  const title = `${access.server_name ?? "?"} · ${access.inbound_tag ?? access.server_inbound_id}`;
  return (
    <Card withBorder padding="sm" data-testid="grant">
      <Stack gap={6}>
        <Group justify="space-between" wrap="nowrap">
          <Group gap="xs" wrap="wrap">
            <Badge variant="light">{access.protocol ?? "?"}</Badge>
            {serverId !== undefined ? (
              <Anchor
                href={href(`/servers/${serverId}`)}
                onClick={(e) => followLink(e, `/servers/${serverId}`)}
                fw={500}
              >
                {title}
              </Anchor>
            ) : (
              <Text fw={500}>{title}</Text>
            )}
            <SyncBadge state={access.sync_state} error={access.sync_error} />
            {!access.is_active && <Badge color="gray">{t("common.inactive")}</Badge>}
          </Group>
          <Group gap={2} wrap="nowrap">
            {access.uri !== undefined && <Copy value={access.uri} label={t("links.copy")} />}
            {access.uri !== undefined && <QrButton value={access.uri} title={title} />}
            {onRevoke !== undefined && (
              <Tooltip label={t("grants.revoke")}>
                <ActionIcon variant="subtle" color="red" aria-label={t("grants.revoke")} onClick={onRevoke}>
                  <TrashIcon />
                </ActionIcon>
              </Tooltip>
            )}
          </Group>
        </Group>
        {access.uri !== undefined && (
          <Code data-testid="share-link" style={{ wordBreak: "break-all", whiteSpace: "pre-wrap" }}>
            {access.uri}
          </Code>
        )}
        <Text size="xs" c="dimmed">
          ↑ {formatBytes(access.uplink_bytes)} · ↓ {formatBytes(access.downlink_bytes)} ·{" "}
          {access.proxy_user_id}
        </Text>
      </Stack>
    </Card>
  );
}

function Grants({ user }: { user: User }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const can = useCan();
  const canGrant = can("access.write");
  // Support reads users and links but not servers: no inbound list, no server links.
  const { choices } = useAllInbounds(can("servers.read") && can("inbounds.read"));
  const access = useQuery({
    queryKey: ["access", user.id],
    queryFn: () =>
      unwrap(
        api.GET("/api/users/{id}/access", {
          params: { path: { id: user.id }, query: { include_uris: true } },
        }),
      ),
  });
  const serverOf = (inboundId: string) => choices.find((c) => c.inbound.id === inboundId)?.server.id;
  const revoke = useMutation({
    mutationFn: (grant: Access) => {
      const serverId = serverOf(grant.server_inbound_id);
      if (serverId === undefined) throw new Error(t("grants.serverUnknown"));
      return unwrap(
        api.DELETE("/api/servers/{server_id}/inbounds/{inbound_id}/users/{email}", {
          params: {
            path: { server_id: serverId, inbound_id: grant.server_inbound_id, email: grant.proxy_user_id },
          },
        }),
      );
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["access", user.id] });
      notifyDone(t("grants.revoked"));
    },
    onError: notifyError,
  });
  const grants = access.data ?? [];
  return (
    <Stack>
      <Title order={3}>{t("grants.title")}</Title>
      {canGrant && <GrantPicker user={user} granted={new Set(grants.map((g) => g.server_inbound_id))} />}
      {access.error && <ErrorAlert error={access.error} />}
      {access.isLoading && <Skeleton h={80} />}
      {!access.isLoading && grants.length === 0 && (
        <Text c="dimmed">{canGrant ? t("grants.empty") : t("grants.none")}</Text>
      )}
      {grants.map((grant) => (
        <GrantCard
          key={grant.id}
          access={grant}
          serverId={serverOf(grant.server_inbound_id)}
          onRevoke={
            canGrant
              ? () =>
                  confirm(
                    t("grants.revokeConfirm", { name: user.name, inbound: grant.inbound_tag ?? "" }),
                    () => revoke.mutate(grant),
                  )
              : undefined
          }
        />
      ))}
      {confirmModal}
    </Stack>
  );
}

function Subscription({ user }: { user: User }) {
  const t = useT();
  const can = useCan();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  // The service gives the URL (its token path; absolute once a public URL is set in the settings).
  const given = user.subscription_url;
  const url = given.startsWith("/") ? `${window.location.origin}${given}` : given;
  const rotate = useMutation({
    mutationFn: () =>
      unwrap(api.POST("/api/users/{id}/revoke-subscription", { params: { path: { id: user.id } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["users", user.id] });
      void queryClient.invalidateQueries({ queryKey: ["access", user.id] });
      notifyDone(t("sub.revoked"));
    },
    onError: notifyError,
  });
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={3}>{t("sub.title")}</Title>
          {can("users.write") && (
            <Button
              size="xs"
              color="red"
              variant="light"
              loading={rotate.isPending}
              onClick={() => confirm(t("sub.revokeConfirm", { name: user.name }), () => rotate.mutate())}
            >
              {t("sub.revoke")}
            </Button>
          )}
        </Group>
        <Group gap="xs" wrap="nowrap">
          <Code data-testid="sub-url" style={{ wordBreak: "break-all" }}>
            {url}
          </Code>
          <Copy value={url} label={t("sub.copy")} />
          <QrButton value={url} title={t("sub.title")} />
        </Group>
        <Text size="xs" c="dimmed">
          {t("sub.hint")}
        </Text>
      </Stack>
      {confirmModal}
    </Card>
  );
}

/** Without a query the usage endpoint answers the totals; with from, to and granularity, the history. */
function totalsOf(answer: Usage | UsageSeries): Usage {
  if (!("servers" in answer)) throw new Error("expected the usage totals");
  return answer;
}
function historyOf(answer: Usage | UsageSeries): UsageSeries {
  if (!("buckets" in answer)) throw new Error("expected the usage history");
  return answer;
}

function UsageCard({ user }: { user: User }) {
  const t = useT();
  const usage = useQuery({
    queryKey: ["usage", user.id],
    queryFn: () =>
      unwrap(api.GET("/api/users/{id}/usage", { params: { path: { id: user.id } } })).then(totalsOf),
  });
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3}>{t("usage.title")}</Title>
        {usage.error && <ErrorAlert error={usage.error} />}
        {usage.data && (
          <>
            <Text size="sm">
              ↑ {formatBytes(usage.data.uplink_bytes)} · ↓ {formatBytes(usage.data.downlink_bytes)}
            </Text>
            {usage.data.uplink_bytes + usage.data.downlink_bytes === 0 ? (
              <Text size="sm" c="dimmed">
                {t("usage.none")}
              </Text>
            ) : (
              <TrafficChart
                rows={usage.data.servers.map((s) => ({
                  name: s.server_name,
                  up: s.uplink_bytes,
                  down: s.downlink_bytes,
                }))}
              />
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

function UsageHistory({ user }: { user: User }) {
  const t = useT();
  const load = (range: HistoryRange) =>
    unwrap(api.GET("/api/users/{id}/usage", { params: { path: { id: user.id }, query: range } })).then(
      (answer) => historyOf(answer).buckets,
    );
  return (
    <Card withBorder>
      <UsageHistoryCard title={t("history.userTitle")} queryKey={["usage", user.id]} load={load} />
    </Card>
  );
}

export function UserPage({ id }: { id: string }) {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const can = useCan();
  const user = useQuery({
    queryKey: ["users", id],
    queryFn: () => unwrap(api.GET("/api/users/{id}", { params: { path: { id } } })),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/users/{id}", { params: { path: { id } } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ["users", id] });
      await queryClient.invalidateQueries({ queryKey: ["users"] });
      notifyDone(t("users.deleted"));
      navigate("/users");
    },
    onError: notifyError,
  });
  if (user.isLoading) return <PageLoader />;
  if (user.error || user.data === undefined) return <ErrorAlert error={user.error} />;
  const data = user.data;
  return (
    <Stack>
      <Group justify="space-between">
        <div>
          <Anchor size="sm" href={href("/users")} onClick={(e) => followLink(e, "/users")}>
            ← {t("nav.users")}
          </Anchor>
          <Title order={2}>{data.name}</Title>
          <Group gap={4}>
            <Text size="xs" c="dimmed" ff="monospace">
              {data.id}
            </Text>
            <Copy value={data.id} label={t("users.copyId")} />
          </Group>
        </div>
        <Group gap="xs">
          {can("audit.read") && <AuditLink target={data.id} size="sm" />}
          {can("users.write") && (
            <Button
              color="red"
              variant="light"
              loading={remove.isPending}
              onClick={() => confirm(t("users.deleteConfirm", { name: data.name }), () => remove.mutate())}
            >
              {t("users.delete")}
            </Button>
          )}
        </Group>
      </Group>
      {/* Access first: fixing it is what operators come here for, and on a phone it leads. */}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Stack>
          <Grants user={data} />
          <Subscription user={data} />
        </Stack>
        <Stack>
          <UserForm user={data} canEdit={can("users.write")} />
          <LimitsCard user={data} canEdit={can("users.write")} />
          <UsageCard user={data} />
          <UsageHistory user={data} />
        </Stack>
      </SimpleGrid>
      {confirmModal}
    </Stack>
  );
}
