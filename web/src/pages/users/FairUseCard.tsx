// The user page's fair-use card (docs/FAIR-USE.md): the devices (HWIDs) their apps fetched /sub from,
// each removable by whoever may write users, with the device limit applied; the source addresses the
// agents saw within the IP-limit window (where, when) and the block history.
import {
  ActionIcon,
  Badge,
  Card,
  Divider,
  Group,
  Skeleton,
  Stack,
  Table,
  Text,
  Title,
  Tooltip,
} from "@mantine/core";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { User } from "../../api/types.ts";
import { usersApi, useUserDevices, useUserFairUse } from "../../api/users.ts";
import { useI18n } from "../../i18n/i18n.tsx";
import { useConfirm } from "../../ui/Confirm.tsx";
import { ErrorAlert } from "../../ui/errors.tsx";
import { formatDate } from "../../ui/format.ts";
import { TrashIcon } from "../../ui/icons.tsx";

const limitText = (limit: number, t: ReturnType<typeof useI18n>["t"]) =>
  limit === 0 ? t("fairUse.unlimited") : t("fairUse.limit", { limit: String(limit) });

function Devices({ user, canEdit }: { user: User; canEdit: boolean }) {
  const { t, language } = useI18n();
  const [confirm, confirmModal] = useConfirm();
  const devices = useUserDevices(user.id);
  const remove = useChange((deviceId: string) => usersApi.removeDevice(user.id, deviceId), {
    invalidates: [keys.users.devices(user.id)],
    done: t("fairUse.deviceRemoved"),
  });
  const data = devices.data;
  return (
    <Stack gap="xs" data-testid="devices">
      <Group justify="space-between">
        <Text fw={600}>{t("fairUse.devices")}</Text>
        {data && (
          <Badge variant="light" color="gray">
            {data.devices.length} · {limitText(data.effective_device_limit, t)}
          </Badge>
        )}
      </Group>
      {devices.error && <ErrorAlert error={devices.error} />}
      {devices.isLoading && <Skeleton h={40} />}
      {data && data.devices.length === 0 && (
        <Text size="sm" c="dimmed">
          {t("fairUse.noDevices")}
        </Text>
      )}
      {data?.devices.map((device) => {
        const name = [device.model, device.os, device.os_version].filter(Boolean).join(" · ") || device.hwid;
        return (
          <Group key={device.id} justify="space-between" wrap="nowrap" data-testid="device">
            <div style={{ minWidth: 0 }}>
              <Text size="sm" truncate>
                {name}
              </Text>
              <Text size="xs" c="dimmed" truncate>
                {device.app ?? ""} · <span style={{ fontFamily: "monospace" }}>{device.hwid}</span>
              </Text>
              <Text size="xs" c="dimmed">
                {t("fairUse.seen", {
                  first: formatDate(device.first_seen_at, language),
                  last: formatDate(device.last_seen_at, language),
                })}
              </Text>
            </div>
            {canEdit && (
              <Tooltip label={t("fairUse.removeDevice")}>
                <ActionIcon
                  variant="subtle"
                  color="red"
                  aria-label={t("fairUse.removeDevice")}
                  loading={remove.isPending && remove.variables === device.id}
                  onClick={() =>
                    confirm(t("fairUse.removeDeviceConfirm", { name }), () => remove.mutate(device.id))
                  }
                >
                  <TrashIcon />
                </ActionIcon>
              </Tooltip>
            )}
          </Group>
        );
      })}
      {confirmModal}
    </Stack>
  );
}

function Addresses({ user }: { user: User }) {
  const { t, language } = useI18n();
  const fairUse = useUserFairUse(user.id);
  const data = fairUse.data;
  return (
    <Stack gap="xs" data-testid="addresses">
      <Group justify="space-between">
        <Text fw={600}>{t("fairUse.addresses")}</Text>
        {data && (
          <Badge variant="light" color={data.blocked_until === null ? "gray" : "red"}>
            {data.blocked_until === null
              ? limitText(data.effective_ip_limit, t)
              : t("fairUse.blockedUntil", { time: formatDate(data.blocked_until, language) })}
          </Badge>
        )}
      </Group>
      {fairUse.error && <ErrorAlert error={fairUse.error} />}
      {fairUse.isLoading && <Skeleton h={40} />}
      {data && data.addresses.length === 0 && (
        <Text size="sm" c="dimmed">
          {t("fairUse.noAddresses")}
        </Text>
      )}
      {data && data.addresses.length > 0 && (
        <Table fz="xs" striped>
          <Table.Tbody>
            {data.addresses.map((address) => (
              <Table.Tr key={`${address.ip}-${address.server_id}`}>
                <Table.Td ff="monospace">{address.ip}</Table.Td>
                <Table.Td>{address.key === null ? t("fairUse.allowListed") : address.key}</Table.Td>
                <Table.Td>{formatDate(address.last_seen, language)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <Text fw={600} size="sm">
        {t("fairUse.blocks")}
      </Text>
      {data && data.blocks.length === 0 && (
        <Text size="sm" c="dimmed">
          {t("fairUse.noBlocks")}
        </Text>
      )}
      {data?.blocks.map((block) => (
        <Text key={block.id} size="xs" data-testid="block">
          {t("fairUse.block", {
            count: String(block.address_count),
            limit: String(block.ip_limit),
            from: formatDate(block.started_at, language),
            until: block.ended_at === null ? t("fairUse.blockOpen") : formatDate(block.ended_at, language),
          })}
        </Text>
      ))}
    </Stack>
  );
}

export function FairUseCard({ user, canEdit }: { user: User; canEdit: boolean }) {
  const { t } = useI18n();
  return (
    <Card withBorder data-testid="fair-use-card">
      <Stack gap="sm">
        <Title order={3}>{t("fairUse.title")}</Title>
        <Devices user={user} canEdit={canEdit} />
        <Divider />
        <Addresses user={user} />
      </Stack>
    </Card>
  );
}
