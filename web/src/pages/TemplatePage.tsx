// The template editor: config and variables as JSON, checked by the service when saved; each error
// it names by JSON path is shown with its line, and a click puts the cursor there.

import { Alert, Button, Group, Select, Stack, Text, TextInput, Title } from "@mantine/core";
import { useEffect, useMemo, useState } from "react";
import { ApiError } from "../api/client.ts";
import { templatesApi, useTemplate } from "../api/fleet.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import type { Template, TemplateInput } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { locateError, locatePaths, syntaxError } from "../json/locate.ts";
import { navigate } from "../router.tsx";
import { CodeField, jsonSyntax, type LocatedError } from "../ui/CodeField.tsx";
import { ConfirmButton } from "../ui/Confirm.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";
import { BackLink } from "../ui/Scaffold.tsx";

const EMPTY_CONFIG = `{
  "protocol": "vless",
  "settings": { "decryption": "none" },
  "streamSettings": { "network": "tcp", "security": "none" }
}`;

type Draft = {
  name: string;
  description: string;
  clientFlow: "" | "xtls-rprx-vision";
  config: string;
  variables: string;
};

function draftOf(template: Template | undefined): Draft {
  return {
    name: template?.name ?? "",
    description: template?.description ?? "",
    clientFlow: template?.client_flow ?? "",
    config: template ? JSON.stringify(template.config, null, 2) : EMPTY_CONFIG,
    variables: JSON.stringify(template?.variables ?? [], null, 2),
  };
}

type FieldError = LocatedError & { field: "config" | "variables" | "other" };

function locate(error: unknown, draft: Draft): FieldError[] {
  if (!(error instanceof ApiError)) return [];
  const config = locatePaths(draft.config);
  const variables = locatePaths(draft.variables);
  return (error.problem.errors ?? []).map((e) => {
    const path = e.path.replace(/^body\./, "");
    const bare = path.replace(/^\w+: /, "");
    if (bare.startsWith("variables")) {
      return { ...e, field: "variables", at: locateError(variables, bare.replace(/^variables/, "")) };
    }
    if (bare.startsWith("config") || path !== bare)
      return { ...e, field: "config", at: locateError(config, bare) };
    return { ...e, field: "other", at: undefined };
  });
}

export function TemplatePage({ id }: { id: string }) {
  const isNew = id === "new";
  const template = useTemplate(id, !isNew);
  if (!isNew && template.isLoading) return <PageLoader />;
  if (!isNew && template.data === undefined) return <ErrorAlert error={template.error} />;
  return <TemplateEditor key={template.data?.updated_at ?? "new"} template={template.data} />;
}

function TemplateEditor({ template }: { template: Template | undefined }) {
  const t = useT();
  const [draft, setDraft] = useState<Draft>(() => draftOf(template));
  const canWrite = useCan()("templates.write");
  const save = useChange(
    () => {
      const body: TemplateInput = {
        name: draft.name,
        description: draft.description,
        client_flow: draft.clientFlow,
        config: JSON.parse(draft.config) as TemplateInput["config"],
        variables: JSON.parse(draft.variables) as TemplateInput["variables"],
      };
      return template === undefined ? templatesApi.create(body) : templatesApi.update(template.id, body);
    },
    {
      invalidates: [keys.templates.all],
      done: t("common.saved"),
      onSuccess: (saved) => {
        if (template === undefined) navigate(`/templates/${saved.id}`, { replace: true });
      },
    },
  );
  const remove = useChange(() => templatesApi.remove(template?.id ?? ""), {
    invalidates: [keys.templates.all],
    onSuccess: () => navigate("/templates"),
  });
  // Errors belong to the text that was sent; editing clears them.
  const located = useMemo(() => locate(save.error, draft), [save.error, draft]);
  const { reset } = save;
  useEffect(() => {
    if (draft) reset();
  }, [draft, reset]);
  const canSave = syntaxError(draft.config) === undefined && syntaxError(draft.variables) === undefined;
  const other = located.filter((e) => e.field === "other");
  return (
    <Stack>
      <div>
        <BackLink to="/templates" label={t("nav.templates")} />
        <Group justify="space-between">
          <Title order={2}>{template?.name ?? t("templates.new")}</Title>
          {template && canWrite && (
            <ConfirmButton
              variant="light"
              question={t("templates.deleteConfirm", { name: template.name })}
              change={remove}
            >
              {t("common.delete")}
            </ConfirmButton>
          )}
        </Group>
        {template && (
          <Text size="sm" c="dimmed">
            {template.protocol} / {template.network} / {template.security} ·{" "}
            {template.supported_cores.join(", ")}
            {template.needs_certificate ? ` · ${t("templates.needsCertificate")}` : ""}
          </Text>
        )}
      </div>
      <Group grow align="flex-start">
        <TextInput
          label={t("templates.name")}
          required
          readOnly={!canWrite}
          value={draft.name}
          onChange={(e) => setDraft({ ...draft, name: e.currentTarget.value })}
        />
        <Select
          label={t("templates.clientFlow")}
          data={[
            { value: "", label: t("templates.noFlow") },
            { value: "xtls-rprx-vision", label: "xtls-rprx-vision" },
          ]}
          value={draft.clientFlow}
          readOnly={!canWrite}
          allowDeselect={false}
          onChange={(v) => setDraft({ ...draft, clientFlow: v === "xtls-rprx-vision" ? v : "" })}
        />
      </Group>
      <TextInput
        label={t("templates.description")}
        readOnly={!canWrite}
        value={draft.description}
        onChange={(e) => setDraft({ ...draft, description: e.currentTarget.value })}
      />
      <CodeField
        label={t("templates.config")}
        value={draft.config}
        onChange={(config) => setDraft({ ...draft, config })}
        syntaxError={jsonSyntax(t, draft.config)}
        errors={located.filter((e) => e.field === "config")}
        testId="template-config"
        readOnly={!canWrite}
      />
      <CodeField
        label={t("templates.variablesJson")}
        value={draft.variables}
        onChange={(variables) => setDraft({ ...draft, variables })}
        syntaxError={jsonSyntax(t, draft.variables)}
        errors={located.filter((e) => e.field === "variables")}
        testId="template-variables-json"
        readOnly={!canWrite}
      />
      {other.length > 0 && (
        <Alert color="red">
          {other.map((e) => (
            <Text key={e.path} size="sm">
              <code>{e.path}</code> {e.message}
            </Text>
          ))}
        </Alert>
      )}
      {save.isError && located.length === 0 && <ErrorAlert error={save.error} />}
      {canWrite && (
        <Group justify="flex-end">
          <Button onClick={() => save.mutate()} loading={save.isPending} disabled={!canSave}>
            {template ? t("common.save") : t("common.create")}
          </Button>
        </Group>
      )}
    </Stack>
  );
}
