// Create or edit a webhook: name, URL, signing secret (generated when left empty; write-only), the
// events it receives (all, or those picked), active. A generated secret is shown once.

import {
  Alert,
  Button,
  Checkbox,
  Code,
  Group,
  Modal,
  PasswordInput,
  SimpleGrid,
  Stack,
  Switch,
  TextInput,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { webhooksApi } from "../../api/admin.ts";
import { EVENT_TYPES, type EventType } from "../../api/events.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { CreatedWebhook, Webhook, WebhookInput } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { Copy } from "../../ui/Copy.tsx";
import { applyFieldErrors, notifyDone } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";

type Values = {
  name: string;
  url: string;
  secret: string;
  allEvents: boolean;
  events: string[];
  is_active: boolean;
};

export function WebhookFormModal({
  webhook,
  onClose,
  onCreated,
}: {
  webhook?: Webhook;
  onClose: () => void;
  onCreated?: (created: CreatedWebhook) => void;
}) {
  const t = useT();
  const form = useForm<Values>({
    initialValues: {
      name: webhook?.name ?? "",
      url: webhook?.url ?? "",
      secret: "",
      allEvents: (webhook?.events.length ?? 0) === 0,
      events: webhook?.events ?? [],
      is_active: webhook?.is_active ?? true,
    },
  });
  const save = useChange(
    async (v: Values): Promise<{ created?: CreatedWebhook }> => {
      const body: WebhookInput = {
        name: v.name,
        url: v.url.trim(),
        events: v.allEvents ? [] : (v.events as EventType[]),
        is_active: v.is_active,
        ...(v.secret === "" ? {} : { secret: v.secret }),
      };
      if (webhook === undefined) return { created: await webhooksApi.create(body) };
      await webhooksApi.update(webhook.id, body);
      return {};
    },
    {
      invalidates: [keys.webhooks.all],
      onSuccess: ({ created }) => {
        if (created !== undefined) onCreated?.(created);
        else notifyDone(t("common.saved"));
        onClose();
      },
      onError: (error) => applyFieldErrors(form, error),
    },
  );
  return (
    <Modal opened onClose={onClose} title={webhook ? t("webhooks.edit") : t("webhooks.new")} size="lg">
      <form onSubmit={form.onSubmit((values) => save.mutate(values))}>
        <Stack>
          <TextInput label={t("webhooks.name")} required data-autofocus {...form.getInputProps("name")} />
          <TextInput
            label={t("webhooks.url")}
            description={t("webhooks.urlHint")}
            required
            type="url"
            placeholder="https://example.com/portcullis"
            {...form.getInputProps("url")}
          />
          <PasswordInput
            label={t("webhooks.secret")}
            description={webhook ? t("webhooks.secretKeep") : t("webhooks.secretHint")}
            autoComplete="off"
            {...form.getInputProps("secret")}
          />
          <Switch
            label={t("webhooks.allEvents")}
            {...form.getInputProps("allEvents", { type: "checkbox" })}
          />
          {!form.values.allEvents && (
            <Checkbox.Group label={t("webhooks.events")} {...form.getInputProps("events")}>
              <SimpleGrid cols={{ base: 1, sm: 2 }} spacing={6} mt={6}>
                {EVENT_TYPES.filter((e) => e !== "webhook.test").map((event) => (
                  <Checkbox key={event} value={event} label={<code>{event}</code>} />
                ))}
              </SimpleGrid>
            </Checkbox.Group>
          )}
          <Switch label={t("common.active")} {...form.getInputProps("is_active", { type: "checkbox" })} />
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            label={webhook ? t("common.save") : t("common.create")}
          />
        </Stack>
      </form>
    </Modal>
  );
}

/** A generated signing secret, shown once after the webhook is created. */
export function WebhookSecretModal({ created, onClose }: { created: CreatedWebhook; onClose: () => void }) {
  const t = useT();
  return (
    <Modal opened onClose={onClose} title={t("webhooks.createdTitle", { name: created.name })}>
      <Stack>
        {created.secret === null ? (
          <Alert color="blue">{t("webhooks.ownSecret")}</Alert>
        ) : (
          <>
            <Alert color="yellow">{t("webhooks.secretShownOnce")}</Alert>
            <Group wrap="nowrap" gap="xs">
              <Code data-testid="webhook-secret" style={{ wordBreak: "break-all" }}>
                {created.secret}
              </Code>
              <Copy value={created.secret} label={t("webhooks.copySecret")} />
            </Group>
          </>
        )}
        <Button onClick={onClose}>{t("apiKeys.stored")}</Button>
      </Stack>
    </Modal>
  );
}
