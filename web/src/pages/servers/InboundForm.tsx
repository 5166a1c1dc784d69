// A new inbound from a template: the template's variables become the form (typed by their default:
// number, switch, text, or JSON for the rest); a refused build lands on the variable it names.
import {
  Button,
  Group,
  JsonInput,
  Modal,
  NumberInput,
  Select,
  Stack,
  Switch,
  Text,
  TextInput,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError, api, unwrap } from "../../api/client.ts";
import type { Server, Template } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { notifyError } from "../../ui/errors.tsx";

type Variable = Template["variables"][number];
type Kind = "number" | "boolean" | "string" | "json";

function kindOf(variable: Variable): Kind {
  const value = variable.default;
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string" || value === null || value === undefined) return "string";
  return "json";
}

function initialText(variable: Variable): string {
  const value = variable.default;
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** The values to send: only those the operator set (empty ones take the template's default). */
function variableValues(template: Template, texts: Record<string, string>, flags: Record<string, boolean>) {
  const values: Record<string, unknown> = {};
  for (const variable of template.variables) {
    const kind = kindOf(variable);
    if (kind === "boolean") {
      if (flags[variable.name] !== undefined) values[variable.name] = flags[variable.name];
      continue;
    }
    const text = texts[variable.name] ?? "";
    if (text.trim() === "") continue;
    if (kind === "number") values[variable.name] = Number(text);
    else if (kind === "json") values[variable.name] = JSON.parse(text);
    else values[variable.name] = text;
  }
  return values;
}

function VariableInput({
  variable,
  text,
  flag,
  error,
  onText,
  onFlag,
}: {
  variable: Variable;
  text: string;
  flag: boolean | undefined;
  error: string | undefined;
  onText: (value: string) => void;
  onFlag: (value: boolean) => void;
}) {
  const common = {
    label: variable.name,
    description: variable.description || undefined,
    required: variable.required && (variable.default === null || variable.default === undefined),
    error,
  };
  switch (kindOf(variable)) {
    case "boolean":
      return (
        <Switch
          {...common}
          checked={flag ?? variable.default === true}
          onChange={(e) => onFlag(e.currentTarget.checked)}
        />
      );
    case "number":
      return <NumberInput {...common} value={text} onChange={(v) => onText(String(v))} />;
    case "json":
      return (
        <JsonInput
          {...common}
          value={text}
          onChange={onText}
          autosize
          minRows={3}
          validationError="JSON"
          formatOnBlur
        />
      );
    default:
      return <TextInput {...common} value={text} onChange={(e) => onText(e.currentTarget.value)} />;
  }
}

export function InboundFormModal({ server, onClose }: { server: Server; onClose: () => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const templates = useQuery({ queryKey: ["templates"], queryFn: () => unwrap(api.GET("/api/templates")) });
  const certificates = useQuery({
    queryKey: ["certificates"],
    queryFn: () => unwrap(api.GET("/api/certificates")),
  });
  const [templateId, setTemplateId] = useState<string | null>(null);
  const [port, setPort] = useState<string | number>("");
  const [tag, setTag] = useState("");
  const [certificateId, setCertificateId] = useState<string | null>(null);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [flags, setFlags] = useState<Record<string, boolean>>({});
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const template = templates.data?.find((x) => x.id === templateId);

  const create = useMutation({
    mutationFn: () => {
      if (template === undefined) throw new Error(t("inbound.pickTemplate"));
      return unwrap(
        api.POST("/api/servers/{server_id}/inbounds", {
          params: { path: { server_id: server.id } },
          body: {
            template_id: template.id,
            port: Number(port),
            ...(tag.trim() ? { tag: tag.trim() } : {}),
            ...(certificateId ? { certificate_id: certificateId } : {}),
            variable_values: variableValues(template, texts, flags),
          },
        }),
      );
    },
    onSuccess: async (inbound) => {
      await queryClient.invalidateQueries({ queryKey: ["servers", server.id, "inbounds"] });
      if (inbound.sync_state !== "synced") notifyError(new Error(inbound.sync_error ?? t("sync.pending")));
      onClose();
    },
    onError: (error) => {
      const errors: Record<string, string> = {};
      if (error instanceof ApiError)
        for (const e of error.problem.errors ?? [])
          errors[e.path.replace(/^(body\.|variable_values\.)/, "")] = e.message;
      setFieldErrors(errors);
      notifyError(error);
    },
  });

  const pickTemplate = (id: string | null) => {
    setTemplateId(id);
    const picked = templates.data?.find((x) => x.id === id);
    setTexts(Object.fromEntries((picked?.variables ?? []).map((v) => [v.name, initialText(v)])));
    setFlags({});
    setFieldErrors({});
  };

  return (
    <Modal opened onClose={onClose} title={t("inbound.new")} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Stack>
          <Select
            label={t("inbound.template")}
            placeholder={t("inbound.pickTemplate")}
            required
            searchable
            data={(templates.data ?? []).map((x) => ({
              value: x.id,
              label: `${x.name} (${x.protocol}/${x.network}/${x.security})`,
              disabled: server.core !== null && !x.supported_cores.includes(server.core),
            }))}
            value={templateId}
            onChange={pickTemplate}
            error={fieldErrors.template_id}
            nothingFoundMessage={t("templates.empty")}
            data-autofocus
          />
          {template?.description && (
            <Text size="sm" c="dimmed">
              {template.description}
            </Text>
          )}
          <Group grow align="flex-start">
            <NumberInput
              label={t("inbound.port")}
              min={1}
              max={65535}
              required
              value={port}
              onChange={setPort}
              error={fieldErrors.port}
            />
            <TextInput
              label={t("inbound.tag")}
              placeholder={t("inbound.tagHint")}
              value={tag}
              onChange={(e) => setTag(e.currentTarget.value)}
              error={fieldErrors.tag}
            />
          </Group>
          {template?.needs_certificate && (
            <Select
              label={t("inbound.certificate")}
              description={t("inbound.certificateHint")}
              clearable
              data={(certificates.data ?? []).map((c) => ({
                value: c.id,
                label: `${c.name} (${c.domain}, ${c.status})`,
              }))}
              value={certificateId}
              onChange={setCertificateId}
              error={fieldErrors.certificate_id}
            />
          )}
          {template !== undefined && template.variables.length > 0 && (
            <Stack gap="xs" data-testid="template-variables">
              <Text fw={600} size="sm">
                {t("inbound.variables")}
              </Text>
              {template.variables.map((variable) => (
                <VariableInput
                  key={variable.name}
                  variable={variable}
                  text={texts[variable.name] ?? ""}
                  flag={flags[variable.name]}
                  error={fieldErrors[variable.name]}
                  onText={(value) => setTexts((s) => ({ ...s, [variable.name]: value }))}
                  onFlag={(value) => setFlags((s) => ({ ...s, [variable.name]: value }))}
                />
              ))}
            </Stack>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={create.isPending} disabled={template === undefined}>
              {t("common.create")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
