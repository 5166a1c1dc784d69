// One webhook (owners): what it is, edit, a test event, delete, and its delivery log (status,
// attempts, last HTTP status, last error), followed while deliveries wait.
import { Anchor, Button, Card, Group, Stack, Text, Title } from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { followLink, href, navigate } from "../router.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { DeliveryLog } from "../ui/DeliveryLog.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { PageLoader } from "../ui/PageLoader.tsx";
import { ActiveBadge, EventBadges } from "./WebhooksPage.tsx";
import { WebhookFormModal } from "./webhooks/WebhookForm.tsx";

export function WebhookPage({ id }: { id: string }) {
  const { t, language } = useI18n();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const [isEditing, setEditing] = useState(false);
  const path = { id };
  const webhook = useQuery({
    queryKey: ["webhooks", id],
    queryFn: () => unwrap(api.GET("/api/webhooks/{id}", { params: { path } })),
  });
  const test = useMutation({
    mutationFn: () => unwrap(api.POST("/api/webhooks/{id}/test", { params: { path } })),
    onSuccess: () => {
      notifyDone(t("webhooks.testQueued"));
      void queryClient.invalidateQueries({ queryKey: ["deliveries", "webhook", id] });
    },
    onError: notifyError,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/webhooks/{id}", { params: { path } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ["webhooks", id] });
      await queryClient.invalidateQueries({ queryKey: ["webhooks"] });
      navigate("/webhooks");
    },
    onError: notifyError,
  });
  if (webhook.isLoading) return <PageLoader />;
  if (webhook.data === undefined) return <ErrorAlert error={webhook.error} />;
  const data = webhook.data;
  return (
    <Stack>
      <div>
        <Anchor size="sm" href={href("/webhooks")} onClick={(e) => followLink(e, "/webhooks")}>
          ← {t("nav.webhooks")}
        </Anchor>
        <Group justify="space-between">
          <Group gap="sm">
            <Title order={2}>{data.name}</Title>
            <ActiveBadge webhook={data} />
          </Group>
          <Group gap="xs">
            <Button size="xs" variant="light" loading={test.isPending} onClick={() => test.mutate()}>
              {t("webhooks.test")}
            </Button>
            <Button size="xs" variant="default" onClick={() => setEditing(true)}>
              {t("common.edit")}
            </Button>
            <Button
              size="xs"
              color="red"
              variant="light"
              onClick={() => confirm(t("webhooks.deleteConfirm", { name: data.name }), () => remove.mutate())}
            >
              {t("common.delete")}
            </Button>
          </Group>
        </Group>
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
        queryKey={["deliveries", "webhook", id]}
        fetchPage={(page, perPage) =>
          unwrap(
            api.GET("/api/webhooks/{id}/deliveries", {
              params: { path, query: { page, per_page: perPage } },
            }),
          )
        }
      />
      {isEditing && <WebhookFormModal webhook={data} onClose={() => setEditing(false)} />}
      {confirmModal}
    </Stack>
  );
}
