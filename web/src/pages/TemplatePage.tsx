// The template editor: config and variables as JSON, checked by the service when saved; each error
// it names by JSON path is shown with its line, and a click puts the cursor there.
import { Alert, Anchor, Button, Group, Select, Stack, Text, TextInput, Title } from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { ApiError, api, unwrap } from "../api/client.ts";
import type { Template, TemplateInput } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { locateError, locatePaths, syntaxError } from "../json/locate.ts";
import { followLink, href, navigate } from "../router.tsx";
import { CodeField, jsonSyntax, type LocatedError } from "../ui/CodeField.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { PageLoader } from "../ui/PageLoader.tsx";

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
  const template = useQuery({
    queryKey: ["templates", id],
    queryFn: () => unwrap(api.GET("/api/templates/{id}", { params: { path: { id } } })),
    enabled: !isNew,
  });
  if (!isNew && template.isLoading) return <PageLoader />;
  if (!isNew && template.data === undefined) return <ErrorAlert error={template.error} />;
  return <TemplateEditor key={template.data?.updated_at ?? "new"} template={template.data} />;
}

function TemplateEditor({ template }: { template: Template | undefined }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const [draft, setDraft] = useState<Draft>(() => draftOf(template));
  const canWrite = useCan()("templates.write");
  const save = useMutation({
    mutationFn: () => {
      const body: TemplateInput = {
        name: draft.name,
        description: draft.description,
        client_flow: draft.clientFlow,
        config: JSON.parse(draft.config) as TemplateInput["config"],
        variables: JSON.parse(draft.variables) as TemplateInput["variables"],
      };
      if (template === undefined) return unwrap(api.POST("/api/templates", { body }));
      return unwrap(api.PUT("/api/templates/{id}", { params: { path: { id: template.id } }, body }));
    },
    onSuccess: async (saved) => {
      await queryClient.invalidateQueries({ queryKey: ["templates"] });
      notifyDone(t("common.saved"));
      if (template === undefined) navigate(`/templates/${saved.id}`, { replace: true });
    },
    onError: notifyError,
  });
  const remove = useMutation({
    mutationFn: () =>
      unwrap(api.DELETE("/api/templates/{id}", { params: { path: { id: template?.id ?? "" } } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ["templates"] });
      navigate("/templates");
    },
    onError: notifyError,
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
        <Anchor size="sm" href={href("/templates")} onClick={(e) => followLink(e, "/templates")}>
          ← {t("nav.templates")}
        </Anchor>
        <Group justify="space-between">
          <Title order={2}>{template?.name ?? t("templates.new")}</Title>
          {template && canWrite && (
            <Button
              color="red"
              variant="light"
              onClick={() =>
                confirm(t("templates.deleteConfirm", { name: template.name }), () => remove.mutate())
              }
            >
              {t("common.delete")}
            </Button>
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
      {confirmModal}
    </Stack>
  );
}
