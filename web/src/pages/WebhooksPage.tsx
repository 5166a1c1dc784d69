// Webhooks (owners): signed JSON POSTs of the events each one picks. The list, and a new one whose
// generated secret is shown once; each opens on its own page (edit, test, delivery log).

import { Badge, Button, Group, Stack, Table, Text } from "@mantine/core";
import { useState } from "react";
import { useWebhooks } from "../api/admin.ts";
import type { CreatedWebhook, Webhook } from "../api/types.ts";
import { useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { DataTable, ListState, PageHeader } from "../ui/Scaffold.tsx";
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
  const webhooks = useWebhooks();
  return (
    <Stack>
      <PageHeader title={t("nav.webhooks")} hint={t("webhooks.hint")}>
        <Button onClick={() => setCreating(true)}>{t("webhooks.new")}</Button>
      </PageHeader>
      <ListState query={webhooks} empty={t("webhooks.empty")}>
        {(list) => (
          <DataTable
            minWidth={640}
            columns={["webhooks.name", "webhooks.url", "webhooks.events", "admins.status"]}
          >
            {list.map((webhook) => (
              <Table.Tr key={webhook.id} data-testid="webhook-row">
                <Table.Td>
                  <Link to={`/webhooks/${webhook.id}`}>{webhook.name}</Link>
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
          </DataTable>
        )}
      </ListState>
      {isCreating && <WebhookFormModal onClose={() => setCreating(false)} onCreated={setCreated} />}
      {created !== undefined && (
        <WebhookSecretModal created={created} onClose={() => setCreated(undefined)} />
      )}
    </Stack>
  );
}
