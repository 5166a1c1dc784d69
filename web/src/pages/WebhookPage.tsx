// One webhook (owners): what it is, edit, a test event, delete, and its delivery log (status,
// attempts, last HTTP status, last error), followed while deliveries wait.

import { Button, Card, Stack, Text } from "@mantine/core";
import { useState } from "react";
import { useWebhook, webhooksApi } from "../api/admin.ts";
import { keys } from "../api/keys.ts";
import { useChange, useRemoval } from "../api/mutation.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { ConfirmButton } from "../ui/Confirm.tsx";
import { DeliveryLog } from "../ui/DeliveryLog.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { PageLoader } from "../ui/PageLoader.tsx";
import { DetailHeader } from "../ui/Scaffold.tsx";
import { ActiveBadge, EventBadges } from "./WebhooksPage.tsx";
import { WebhookFormModal } from "./webhooks/WebhookForm.tsx";

export function WebhookPage({ id }: { id: string }) {
  const { t, language } = useI18n();
  const [isEditing, setEditing] = useState(false);
  const webhook = useWebhook(id);
  const test = useChange(() => webhooksApi.test(id), {
    invalidates: [keys.webhooks.deliveries(id)],
    done: t("webhooks.testQueued"),
  });
  const remove = useRemoval(() => webhooksApi.remove(id), keys.webhooks, id);
  if (webhook.isLoading) return <PageLoader />;
  if (webhook.data === undefined) return <ErrorAlert error={webhook.error} />;
  const data = webhook.data;
  return (
    <Stack>
      <div>
        <DetailHeader
          back={{ to: "/webhooks", label: t("nav.webhooks") }}
          title={data.name}
          badge={<ActiveBadge webhook={data} />}
        >
          <Button size="xs" variant="light" loading={test.isPending} onClick={() => test.mutate()}>
            {t("webhooks.test")}
          </Button>
          <Button size="xs" variant="default" onClick={() => setEditing(true)}>
            {t("common.edit")}
          </Button>
          <ConfirmButton
            size="xs"
            variant="light"
            question={t("webhooks.deleteConfirm", { name: data.name })}
            change={remove}
          >
            {t("common.delete")}
          </ConfirmButton>
        </DetailHeader>
      </div>
      <Card withBorder>
        <Stack gap="xs">
          <Text size="sm" ff="monospace" style={{ wordBreak: "break-all" }} data-testid="webhook-url">
            {data.url}
          </Text>
          <EventBadges events={data.events} />
          <Text size="xs" c="dimmed">
            {t("webhooks.updatedAt", { at: formatDate(data.updated_at, language) })} ·{" "}
            {t("webhooks.signedHint")}
          </Text>
        </Stack>
      </Card>
      <DeliveryLog
        queryKey={keys.webhooks.deliveries(id)}
        fetchPage={(page, perPage) => webhooksApi.deliveries(id, page, perPage)}
      />
      {isEditing && <WebhookFormModal webhook={data} onClose={() => setEditing(false)} />}
    </Stack>
  );
}
