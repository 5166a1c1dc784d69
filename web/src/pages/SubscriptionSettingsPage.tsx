// Subscription settings (settings.read; changed with settings.write): how /sub answers — the public
// URL and the headers apps read (support, profile page, announcements, Happ's routing and
// hide-settings, the operator's own templated headers), the subscription page's texts, the
// User-Agent rules that pick each app's format, and the mihomo and sing-box base documents, whose
// validation errors are shown at their path and line. Only the fields that changed are sent. The API
// has no "restore defaults".
import {
  Alert,
  Button,
  Card,
  Group,
  NumberInput,
  Paper,
  SimpleGrid,
  Skeleton,
  Stack,
  Switch,
  Text,
  Textarea,
  TextInput,
  Title,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useMemo } from "react";
import { settingsApi, useSubscriptionSettings } from "../api/admin.ts";
import { ApiError } from "../api/client.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import type { SubscriptionSettings } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { type Translate, useT } from "../i18n/i18n.tsx";
import { locateError, locatePaths } from "../json/locate.ts";
import { locateYaml, yamlSyntaxError } from "../json/yaml.ts";
import { CodeField, jsonSyntax, type LocatedError } from "../ui/CodeField.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { CustomHeaders } from "./settings/CustomHeaders.tsx";
import { UaRules } from "./settings/UaRules.tsx";
import { changesOf, PLACEHOLDER_FIELDS, type Values, valuesOf } from "./settings/values.ts";

export function SubscriptionSettingsPage() {
  const t = useT();
  const settings = useSubscriptionSettings();
  return (
    <Stack>
      <Title order={2}>{t("nav.subscriptionSettings")}</Title>
      <Text size="sm" c="dimmed">
        {t("subSettings.hint")}
      </Text>
      {settings.error && <ErrorAlert error={settings.error} />}
      {settings.isLoading && (
        <Stack data-testid="settings-loading" aria-busy="true">
          <Skeleton h={220} />
          <Skeleton h={160} />
          <Skeleton h={320} />
        </Stack>
      )}
      {settings.data && <SettingsForm settings={settings.data} />}
    </Stack>
  );
}

function Section({ title, hint, children }: { title: string; hint?: string; children: ReactNode }) {
  return (
    <Card withBorder>
      <Stack gap="sm">
        <div>
          <Title order={3} size="h4">
            {title}
          </Title>
          {hint && (
            <Text size="sm" c="dimmed">
              {hint}
            </Text>
          )}
        </div>
        {children}
      </Stack>
    </Card>
  );
}

type Located = { mihomo: LocatedError[]; singbox: LocatedError[]; elsewhere: LocatedError[] };

/** The API's field errors of a failed save, split by where they are shown. */
function splitErrors(error: unknown, sent: Values | undefined, values: Values): Located {
  const located: Located = { mihomo: [], singbox: [], elsewhere: [] };
  if (!(error instanceof ApiError) || sent === undefined) return located;
  for (const { path, message } of error.problem.errors ?? []) {
    const field = path.replace(/^body\.?/, "");
    if (field.startsWith("mihomo_base")) {
      // Errors belong to the text that was sent: once it is edited they are gone.
      if (sent.mihomo_base !== values.mihomo_base) continue;
      const at = locateYaml(values.mihomo_base, field.replace(/^mihomo_base\.?/, ""));
      located.mihomo.push({ path: field, message, at });
    } else if (field.startsWith("singbox_base")) {
      if (sent.singbox_base !== values.singbox_base) continue;
      const jsonPath = field.replace(/^singbox_base\.?/, "").replace(/\.(\d+)(?=\.|$)/g, "[$1]");
      located.singbox.push({
        path: field,
        message,
        at: locateError(locatePaths(values.singbox_base), jsonPath),
      });
    } else if (!((field.split(".")[0] ?? "") in values)) {
      located.elsewhere.push({ path, message, at: undefined });
    }
  }
  return located;
}

function yamlSyntax(t: Translate, text: string): string | undefined {
  const syntax = yamlSyntaxError(text);
  if (syntax === undefined) return undefined;
  const line = syntax.line === undefined ? "" : ` (${t("templates.line", { line: syntax.line })})`;
  return `${t("subSettings.yamlSyntax")}${line}: ${syntax.message}`;
}

function SettingsForm({ settings }: { settings: SubscriptionSettings }) {
  const t = useT();
  const queryClient = useQueryClient();
  const canWrite = useCan()("settings.write");
  const readOnly = !canWrite;
  const form = useForm<Values>({ initialValues: valuesOf(settings) });
  // What is stored changed (saved here, or refetched): the form starts again from it.
  useEffect(() => {
    const values = valuesOf(settings);
    form.setInitialValues(values);
    form.setValues(values);
  }, [settings]);
  const save = useChange((values: Values) => settingsApi.save(changesOf(values, settings)), {
    done: t("common.saved"),
    onSuccess: (saved) => {
      queryClient.setQueryData(keys.subscriptionSettings, saved);
    },
    onError: (error) => {
      if (error instanceof ApiError) {
        for (const { path, message } of error.problem.errors ?? []) {
          const field = path.replace(/^body\./, "");
          if (!/^(mihomo_base|singbox_base)/.test(field)) form.setFieldError(field, message);
        }
      }
    },
  });
  const { values } = form;
  const located = useMemo(
    () => splitErrors(save.error, save.variables, values),
    [save.error, save.variables, values],
  );
  const mihomoSyntax = useMemo(() => yamlSyntax(t, values.mihomo_base), [t, values.mihomo_base]);
  const singboxSyntax = useMemo(() => jsonSyntax(t, values.singbox_base), [t, values.singbox_base]);
  const changed = useMemo(() => {
    if (singboxSyntax !== undefined) return undefined;
    return Object.keys(changesOf(values, settings)).length > 0;
  }, [values, settings, singboxSyntax]);
  const text = (field: keyof Values) => ({ readOnly, ...form.getInputProps(field) });
  return (
    <form onSubmit={form.onSubmit((v) => save.mutate(v))} noValidate>
      <Stack>
        {readOnly && (
          <Alert color="gray" data-testid="settings-read-only">
            {t("subSettings.readOnly")}
          </Alert>
        )}
        <Section title={t("subSettings.general")}>
          <TextInput
            label={t("subSettings.publicUrl")}
            description={t("subSettings.publicUrlHint")}
            placeholder="https://sub.example.com"
            inputMode="url"
            {...text("public_url")}
          />
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label={t("subSettings.supportUrl")}
              description={t("subSettings.supportUrlHint")}
              placeholder="https://t.me/support"
              inputMode="url"
              {...text("support_url")}
            />
            <NumberInput
              label={t("subSettings.updateInterval")}
              description={t("subSettings.updateIntervalHint")}
              min={1}
              max={168}
              allowDecimal={false}
              {...text("update_interval_hours")}
            />
          </SimpleGrid>
          <TextInput
            label={t("subSettings.announce")}
            description={t("subSettings.announceHint")}
            maxLength={500}
            {...text("announce")}
          />
          <Switch
            label={t("subSettings.allowById")}
            description={t("subSettings.allowByIdHint")}
            disabled={readOnly}
            {...form.getInputProps("allow_by_id", { type: "checkbox" })}
          />
        </Section>
        <Section title={t("subSettings.health")} hint={t("subSettings.healthHint")}>
          <Switch
            label={t("subSettings.leaveOutOffline")}
            description={t("subSettings.leaveOutOfflineHint")}
            disabled={readOnly}
            {...form.getInputProps("leave_out_offline_servers", { type: "checkbox" })}
          />
          <NumberInput
            label={t("subSettings.offlineMinutes")}
            description={t("subSettings.offlineMinutesHint")}
            min={1}
            max={10_080}
            allowDecimal={false}
            maw={320}
            {...text("offline_minutes")}
          />
        </Section>
        <Section title={t("subSettings.appHeaders")} hint={t("subSettings.appHeadersHint")}>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label={t("subSettings.profileWebPageUrl")}
              description={t("subSettings.profileWebPageUrlHint")}
              placeholder="https://example.com/account"
              inputMode="url"
              {...text("profile_web_page_url")}
            />
            <TextInput
              label={t("subSettings.announceUrl")}
              description={t("subSettings.announceUrlHint")}
              placeholder="https://t.me/channel"
              inputMode="url"
              {...text("announce_url")}
            />
          </SimpleGrid>
          <TextInput
            label={t("subSettings.routing")}
            description={t("subSettings.routingHint")}
            placeholder="happ://routing/…"
            spellCheck={false}
            maxLength={8192}
            {...text("routing")}
          />
          <Switch
            label={t("subSettings.hideSettings")}
            description={t("subSettings.hideSettingsHint")}
            disabled={readOnly}
            {...form.getInputProps("hide_settings", { type: "checkbox" })}
          />
          <CustomHeaders form={form} readOnly={readOnly} />
        </Section>
        <Section title={t("subSettings.rules")} hint={t("subSettings.rulesHint")}>
          <UaRules form={form} readOnly={readOnly} />
        </Section>
        <Section title={t("subSettings.page")} hint={t("subSettings.pageHint")}>
          <TextInput
            label={t("subSettings.pageTitle")}
            description={t("subSettings.pageTitleHint")}
            {...text("page_title")}
          />
          <Textarea
            label={t("subSettings.pageNote")}
            description={t("subSettings.pageNoteHint")}
            autosize
            minRows={2}
            maxRows={8}
            {...text("page_note")}
          />
        </Section>
        <Section title={t("subSettings.placeholders")} hint={t("subSettings.placeholdersHint")}>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            {PLACEHOLDER_FIELDS.map((field) => (
              <TextInput key={field} label={t(`subSettings.${field}`)} maxLength={200} {...text(field)} />
            ))}
          </SimpleGrid>
        </Section>
        <Section title={t("subSettings.bases")}>
          <CodeField
            label={t("subSettings.mihomoBase")}
            description={t("subSettings.mihomoBaseHint")}
            value={values.mihomo_base}
            onChange={(v) => form.setFieldValue("mihomo_base", v)}
            readOnly={readOnly}
            syntaxError={mihomoSyntax}
            errors={located.mihomo}
            testId="mihomo-base"
          />
          <CodeField
            label={t("subSettings.singboxBase")}
            description={t("subSettings.singboxBaseHint")}
            value={values.singbox_base}
            onChange={(v) => form.setFieldValue("singbox_base", v)}
            readOnly={readOnly}
            syntaxError={singboxSyntax}
            errors={located.singbox}
            testId="singbox-base"
          />
        </Section>
        {save.isError && (!(save.error instanceof ApiError) || located.elsewhere.length > 0) && (
          <ErrorAlert error={save.error} />
        )}
        {save.isError && save.error instanceof ApiError && located.elsewhere.length === 0 && (
          <Alert color="red" role="alert" data-testid="save-error">
            {save.error.problem.detail}
          </Alert>
        )}
        {canWrite && (
          // The form is long: once something changed, its buttons stay in view at the window's foot.
          <Paper
            withBorder={changed === true}
            p={changed === true ? "sm" : 0}
            pos={changed === true ? "sticky" : "static"}
            bottom={0}
            style={{ zIndex: 2 }}
            data-testid="settings-actions"
          >
            <Group justify="flex-end" wrap="wrap">
              {changed === false && (
                <Text size="sm" c="dimmed">
                  {t("subSettings.noChanges")}
                </Text>
              )}
              <Button
                variant="default"
                disabled={changed === false}
                onClick={() => {
                  form.reset();
                  save.reset();
                }}
              >
                {t("subSettings.discard")}
              </Button>
              <Button
                type="submit"
                loading={save.isPending}
                disabled={changed !== true || mihomoSyntax !== undefined}
              >
                {t("common.save")}
              </Button>
            </Group>
          </Paper>
        )}
      </Stack>
    </form>
  );
}
