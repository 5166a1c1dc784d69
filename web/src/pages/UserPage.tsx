// One user: their fields, their subscription URL, every grant with its share link (copy, QR), grant
// on any inbound in two clicks (open the picker, pick), revoke, usage per server and over time, its
// devices and addresses (fair use), delete.

import {
  ActionIcon,
  Badge,
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
import { useState } from "react";
import { keys } from "../api/keys.ts";
import { useChange, useRemoval } from "../api/mutation.ts";
import { inboundsApi, useAllInbounds } from "../api/servers.ts";
import type { Access, Server, User } from "../api/types.ts";
import { userHistory, usersApi, useUser, useUserAccess, useUserUsage } from "../api/users.ts";
import { useCan } from "../auth/me.ts";
import { TrafficChart } from "../charts/TrafficChart.tsx";
import { UsageHistoryCard } from "../charts/UsageHistoryCard.tsx";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { AuditLink } from "../ui/AuditLink.tsx";
import { ConfirmButton, useConfirm } from "../ui/Confirm.tsx";
import { Copy } from "../ui/Copy.tsx";
import { ErrorAlert, notifyError } from "../ui/errors.tsx";
import { QrIcon, TrashIcon } from "../ui/icons.tsx";
import { UpDown } from "../ui/Num.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";
import { QrCode } from "../ui/QrCode.tsx";
import { BackLink } from "../ui/Scaffold.tsx";
import { SyncBadge } from "../ui/StatusBadge.tsx";
import { FairUseCard } from "./users/FairUseCard.tsx";
import { PlanCard } from "./users/PlanCard.tsx";
import { UserCard } from "./users/UserCard.tsx";

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

function GrantPicker({ user, granted }: { user: User; granted: Set<string> }) {
  const t = useT();
  const { choices, isLoading, error } = useAllInbounds();
  const grant = useChange(
    (inboundId: string) => {
      const picked = choices.find((c) => c.inbound.id === inboundId);
      if (picked === undefined) throw new Error(`unknown inbound ${inboundId}`);
      return inboundsApi.grant({ server_id: picked.server.id, inbound_id: inboundId }, user.id);
    },
    {
      invalidates: [keys.users.access(user.id)],
      onSuccess: (access) => {
        if (access.sync_state !== "synced") notifyError(new Error(access.sync_error ?? t("sync.pending")));
      },
    },
  );
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

/** Only active and on-hold users have credentials on the cores. */
const ON_CORE: ReadonlySet<User["status"]> = new Set(["active", "on_hold"]);

/**
 * What is true of a grant now: off the core while the user is not active (expired, limited,
 * disabled) whatever its sync state says, and unknowable while its server's core does not answer.
 */
function GrantState({ access, user, server }: { access: Access; user: User; server: Server | undefined }) {
  const t = useT();
  if (!ON_CORE.has(user.status)) {
    const status = t(`userStatus.${user.status}`);
    return (
      <Badge color="red" variant="light" data-testid="sync-state" data-state="off-core">
        {t("grants.offCore", { status })}
      </Badge>
    );
  }
  if (server !== undefined && (server.status === "offline" || server.status === "error")) {
    return (
      <Tooltip label={t("grants.coreDownHint")} multiline maw={320}>
        <Badge color="red" variant="light" data-testid="sync-state" data-state="core-down">
          {t("grants.coreDown")}
        </Badge>
      </Tooltip>
    );
  }
  return <SyncBadge state={access.sync_state} error={access.sync_error} />;
}

function GrantCard({
  access,
  user,
  server,
  onRevoke,
}: {
  access: Access;
  user: User;
  server: Server | undefined;
  onRevoke: (() => void) | undefined;
}) {
  const t = useT();
  const serverId = server?.id;
  const isDead = !ON_CORE.has(user.status);
  const title = `${access.server_name ?? "?"} · ${access.inbound_tag ?? access.server_inbound_id}`;
  // One link per enabled host of the inbound (one without hosts), as the user's /sub writes them.
  const links = access.links ?? (access.uri === undefined ? [] : [{ remark: title, uri: access.uri }]);
  const single = links.length === 1 ? links[0] : undefined;
  return (
    <Card withBorder padding="sm" data-testid="grant">
      <Stack gap={6}>
        <Group justify="space-between" wrap="nowrap">
          <Group gap="xs" wrap="wrap">
            <Badge variant="light">{access.protocol ?? "?"}</Badge>
            {serverId !== undefined ? (
              <Link to={`/servers/${serverId}`} fw={500}>
                {title}
              </Link>
            ) : (
              <Text fw={500}>{title}</Text>
            )}
            <GrantState access={access} user={user} server={server} />
            {!access.is_active && <Badge color="gray">{t("common.inactive")}</Badge>}
          </Group>
          <Group gap={2} wrap="nowrap">
            {single !== undefined && <Copy value={single.uri} label={t("links.copy")} />}
            {single !== undefined && <QrButton value={single.uri} title={title} />}
            {onRevoke !== undefined && (
              <Tooltip label={t("grants.revoke")}>
                <ActionIcon variant="subtle" color="red" aria-label={t("grants.revoke")} onClick={onRevoke}>
                  <TrashIcon />
                </ActionIcon>
              </Tooltip>
            )}
          </Group>
        </Group>
        {isDead && (
          <Text size="xs" c="var(--mantine-color-red-light-color)" data-testid="link-dead">
            {t("grants.linkDead", { status: t(`userStatus.${user.status}`) })}
          </Text>
        )}
        {links.map((link) => (
          <Stack key={link.uri} gap={2}>
            {single === undefined && (
              <Group justify="space-between" wrap="nowrap">
                <Text size="sm" fw={500} data-testid="share-link-remark">
                  {link.remark}
                </Text>
                <Group gap={2} wrap="nowrap">
                  <Copy value={link.uri} label={t("links.copy")} />
                  <QrButton value={link.uri} title={link.remark} />
                </Group>
              </Group>
            )}
            <Code
              data-testid="share-link"
              style={{ wordBreak: "break-all", whiteSpace: "pre-wrap", opacity: isDead ? 0.55 : undefined }}
            >
              {link.uri}
            </Code>
          </Stack>
        ))}
        <Text size="xs" c="dimmed">
          <UpDown up={access.uplink_bytes} down={access.downlink_bytes} /> ·{" "}
          <bdi dir="ltr">{access.proxy_user_id}</bdi>
        </Text>
      </Stack>
    </Card>
  );
}

function Grants({ user }: { user: User }) {
  const t = useT();
  const [confirm, confirmModal] = useConfirm();
  const can = useCan();
  const canGrant = can("access.write");
  // Support reads users and links but not servers: no inbound list, no server links.
  const { choices } = useAllInbounds(can("servers.read") && can("inbounds.read"));
  const access = useUserAccess(user.id);
  const serverOf = (inboundId: string) => choices.find((c) => c.inbound.id === inboundId)?.server.id;
  const revoke = useChange(
    (grant: Access) => {
      const serverId = serverOf(grant.server_inbound_id);
      if (serverId === undefined) throw new Error(t("grants.serverUnknown"));
      return inboundsApi.revoke({
        server_id: serverId,
        inbound_id: grant.server_inbound_id,
        email: grant.proxy_user_id,
      });
    },
    { invalidates: [keys.users.access(user.id)], done: t("grants.revoked") },
  );
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
          user={user}
          server={choices.find((c) => c.inbound.id === grant.server_inbound_id)?.server}
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
  // The service gives the URL (its token path; absolute once a public URL is set in the settings).
  const given = user.subscription_url;
  const url = given.startsWith("/") ? `${window.location.origin}${given}` : given;
  const rotate = useChange(() => usersApi.revokeSubscription(user.id), {
    invalidates: [keys.users.one(user.id)],
    done: t("sub.revoked"),
  });
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={3}>{t("sub.title")}</Title>
          {can("users.write") && (
            <ConfirmButton
              size="xs"
              variant="light"
              change={rotate}
              question={t("sub.revokeConfirm", { name: user.name })}
            >
              {t("sub.revoke")}
            </ConfirmButton>
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
    </Card>
  );
}

function UsageCard({ user }: { user: User }) {
  const t = useT();
  const usage = useUserUsage(user.id);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3}>{t("usage.title")}</Title>
        {usage.error && <ErrorAlert error={usage.error} />}
        {usage.data && (
          <>
            <Text size="sm">
              <UpDown up={usage.data.uplink_bytes} down={usage.data.downlink_bytes} />
            </Text>
            {usage.data.uplink_bytes + usage.data.downlink_bytes === 0 ? (
              <Text size="sm" c="dimmed">
                {t("usage.none")}
              </Text>
            ) : (
              <TrafficChart items={usage.data.servers} name={(s) => s.server_name} />
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}

export function UserPage({ id }: { id: string }) {
  const { t } = useI18n();
  const can = useCan();
  const user = useUser(id);
  const remove = useRemoval(() => usersApi.remove(id), keys.users, id, t("users.deleted"));
  if (user.isLoading) return <PageLoader />;
  if (user.error || user.data === undefined) return <ErrorAlert error={user.error} />;
  const data = user.data;
  return (
    <Stack>
      <Group justify="space-between">
        <div>
          <BackLink to="/users" label={t("nav.users")} />
          <Title order={2}>{data.name}</Title>
          <Group gap={4}>
            <Text size="xs" c="dimmed" ff="monospace" dir="ltr">
              {data.id}
            </Text>
            <Copy value={data.id} label={t("users.copyId")} />
          </Group>
        </div>
        <Group gap="xs">
          {can("audit.read") && <AuditLink target={data.id} size="sm" />}
          {can("users.write") && (
            <ConfirmButton
              variant="light"
              change={remove}
              question={t("users.deleteConfirm", { name: data.name })}
            >
              {t("users.delete")}
            </ConfirmButton>
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
          <UserCard user={data} canEdit={can("users.write")} />
          <PlanCard user={data} />
          <FairUseCard user={data} canEdit={can("users.write")} />
          <UsageCard user={data} />
          <UsageHistoryCard
            title={t("history.userTitle")}
            queryKey={keys.users.usage(data.id)}
            load={(range) => userHistory(data.id, range)}
          />
        </Stack>
      </SimpleGrid>
    </Stack>
  );
}
