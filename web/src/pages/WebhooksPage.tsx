// Webhooks (owners): signed JSON POSTs of the events each one picks. The list, and a new one whose
// generated secret is shown once; each opens on its own page (edit, test, delivery log).
import { Anchor, Badge, Button, Group, Skeleton, Stack, Table, Text, Title } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import type { CreatedWebhook, Webhook } from "../api/types.ts";
import { useT } from "../i18n/i18n.tsx";
import { followLink, href } from "../router.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { WebhookFormModal, WebhookSecretModal } from "./webhooks/WebhookForm.tsx";

export function EventBadges({ events }: { events: string[] }) {
  const t = useT();
  if (events.length === 0)
    return (
      <Badge variant="outline" color="gray">
        {t("webhooks.allEvents")}
      </Badge>
    );
  return (
    <Group gap={4}>
      {events.map((event) => (
        <Badge key={event} variant="light" color="gray" tt="none">
          {event}
        </Badge>
      ))}
    </Group>
  );
}

export function ActiveBadge({ webhook }: { webhook: Webhook }) {
  const t = useT();
  return (
    <Badge color={webhook.is_active ? "teal" : "gray"} variant="light">
      {webhook.is_active ? t("common.active") : t("common.inactive")}
    </Badge>
  );
}

export function WebhooksPage() {
  const t = useT();
  const [isCreating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedWebhook>();
  const webhooks = useQuery({ queryKey: ["webhooks"], queryFn: () => unwrap(api.GET("/api/webhooks")) });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t("nav.webhooks")}</Title>
        <Button onClick={() => setCreating(true)}>{t("webhooks.new")}</Button>
      </Group>
      <Text size="sm" c="dimmed">
        {t("webhooks.hint")}
      </Text>
      {webhooks.error && <ErrorAlert error={webhooks.error} />}
      {webhooks.isLoading && <Skeleton h={120} />}
      {webhooks.data?.length === 0 && (
        <Text c="dimmed" ta="center" py="lg">
          {t("webhooks.empty")}
        </Text>
      )}
      {(webhooks.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={640}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("webhooks.name")}</Table.Th>
                <Table.Th>{t("webhooks.url")}</Table.Th>
                <Table.Th>{t("webhooks.events")}</Table.Th>
                <Table.Th>{t("admins.status")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {webhooks.data?.map((webhook) => (
                <Table.Tr key={webhook.id} data-testid="webhook-row">
                  <Table.Td>
                    <Anchor
                      href={href(`/webhooks/${webhook.id}`)}
                      onClick={(e) => followLink(e, `/webhooks/${webhook.id}`)}
                    >
                      {webhook.name}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace" lineClamp={1} maw={320} style={{ wordBreak: "break-all" }}>
                      {webhook.url}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <EventBadges events={webhook.events} />
                  </Table.Td>
                  <Table.Td>
                    <ActiveBadge webhook={webhook} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {isCreating && <WebhookFormModal onClose={() => setCreating(false)} onCreated={setCreated} />}
      {created !== undefined && (
        <WebhookSecretModal created={created} onClose={() => setCreated(undefined)} />
      )}
    </Stack>
  );
}
