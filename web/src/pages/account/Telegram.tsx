// The signed-in admin's Telegram notifications: their bot's token (write-only: sent again with every
// change), the chats it writes to, the language and events; a test message and the delivery log.

import {
  Alert,
  Button,
  Card,
  Checkbox,
  Group,
  PasswordInput,
  Select,
  Stack,
  TagsInput,
  Text,
  Title,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useEffect } from "react";
import { telegramApi, useTelegram } from "../../api/admin.ts";
import { TELEGRAM_EVENT_TYPES, type TelegramEventType } from "../../api/events.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { TelegramInput } from "../../api/types.ts";
import { LANGUAGES, useI18n } from "../../i18n/i18n.tsx";
import { ConfirmButton } from "../../ui/Confirm.tsx";
import { DeliveryLog } from "../../ui/DeliveryLog.tsx";
import { applyFieldErrors, ErrorAlert } from "../../ui/errors.tsx";
import { formatDate } from "../../ui/format.ts";

type Values = { bot_token: string; chat_ids: string[]; language: string; events: string[] };

export function Telegram() {
  const { t, language } = useI18n();
  const settings = useTelegram();
  const form = useForm<Values>({
    initialValues: { bot_token: "", chat_ids: [], language, events: [...TELEGRAM_EVENT_TYPES] },
  });
  const stored = settings.data;
  useEffect(() => {
    if (stored)
      form.setValues({
        bot_token: "",
        chat_ids: stored.chat_ids,
        language: stored.language,
        events: stored.events,
      });
  }, [stored?.updated_at]);
  // The settings and their delivery log both sit under keys.telegram.all.
  const invalidates = [keys.telegram.all];
  const save = useChange(
    (v: Values) =>
      telegramApi.save({
        // Left empty, the stored token is kept (the API keeps it when the field is absent).
        ...(v.bot_token.trim() === "" ? {} : { bot_token: v.bot_token.trim() }),
        chat_ids: v.chat_ids,
        language: v.language as NonNullable<TelegramInput["language"]>,
        events: v.events as TelegramEventType[],
      }),
    { invalidates, done: t("common.saved"), onError: (error) => applyFieldErrors(form, error) },
  );
  const stop = useChange(telegramApi.stop, { invalidates, onSuccess: () => form.reset() });
  const test = useChange(telegramApi.test, { invalidates, done: t("telegram.testQueued") });
  return (
    <Stack>
      <Card withBorder>
        <form onSubmit={form.onSubmit((values) => save.mutate(values))}>
          <Stack>
            <Group justify="space-between">
              <Title order={3}>{t("telegram.title")}</Title>
              {stored && (
                <Text size="xs" c="dimmed">
                  {t("telegram.savedAt", { at: formatDate(stored.updated_at, language) })}
                </Text>
              )}
            </Group>
            <Text size="sm" c="dimmed">
              {t("telegram.hint")}
            </Text>
            {settings.error && <ErrorAlert error={settings.error} />}
            {stored === null && <Alert color="gray">{t("telegram.off")}</Alert>}
            <PasswordInput
              label={t("telegram.botToken")}
              description={stored ? t("telegram.botTokenStored") : t("telegram.botTokenHint")}
              required={!stored}
              autoComplete="off"
              placeholder="123456789:AA…"
              {...form.getInputProps("bot_token")}
            />
            <TagsInput
              label={t("telegram.chatIds")}
              description={t("telegram.chatIdsHint")}
              required
              maxTags={10}
              splitChars={[",", " "]}
              {...form.getInputProps("chat_ids")}
            />
            <Select
              label={t("telegram.language")}
              data={LANGUAGES}
              allowDeselect={false}
              w={200}
              {...form.getInputProps("language")}
            />
            <Checkbox.Group label={t("telegram.events")} {...form.getInputProps("events")}>
              <Stack gap={6} mt={6}>
                {TELEGRAM_EVENT_TYPES.map((event) => (
                  <Checkbox key={event} value={event} label={<code>{event}</code>} />
                ))}
              </Stack>
            </Checkbox.Group>
            <Group justify="flex-end" wrap="wrap">
              {stored && (
                <>
                  <Button variant="light" loading={test.isPending} onClick={() => test.mutate()}>
                    {t("telegram.test")}
                  </Button>
                  <ConfirmButton variant="subtle" change={stop} question={t("telegram.stopConfirm")}>
                    {t("telegram.stop")}
                  </ConfirmButton>
                </>
              )}
              <Button type="submit" loading={save.isPending}>
                {t("common.save")}
              </Button>
            </Group>
          </Stack>
        </form>
      </Card>
      {stored && <DeliveryLog queryKey={keys.telegram.deliveries()} fetchPage={telegramApi.deliveries} />}
    </Stack>
  );
}
