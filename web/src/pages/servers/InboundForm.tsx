// An inbound from a template, new or edited: the template's variables become the form (typed by
// their default: number, switch, text, or JSON for the rest); a refused build lands on the variable
// it names. Editing sends the values as a whole (the API replaces them) and keeps the template.

import { Group, JsonInput, Modal, NumberInput, Select, Stack, Switch, Text, TextInput } from "@mantine/core";
import { useEffect, useState } from "react";
import { ApiError } from "../../api/client.ts";
import { useCertificates, useTemplates } from "../../api/fleet.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { inboundsApi } from "../../api/servers.ts";
import type { Inbound, Server, Template } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { notifyError } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";
import { StarterOffer } from "../templates/StarterOffer.tsx";

type Variable = Template["variables"][number];
type Kind = "number" | "boolean" | "string" | "json";

function kindOf(variable: Variable): Kind {
  const value = variable.default;
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string" || value === null || value === undefined) return "string";
  return "json";
}

function initialText(variable: Variable, stored?: unknown): string {
  const value = stored !== undefined ? stored : variable.default;
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

export function InboundFormModal({
  server,
  inbound,
  onClose,
}: {
  server: Server;
  inbound?: Inbound;
  onClose: () => void;
}) {
  const t = useT();
  const templates = useTemplates();
  const certificates = useCertificates();
  // Only what this server's core can build: an Xray-only template is not offered on a V2Ray server.
  const fits = (x: Template) => server.core === null || x.supported_cores.includes(server.core);
  const offered = (templates.data ?? []).filter((x) => fits(x) || x.id === inbound?.template_id);
  const hidden = (templates.data?.length ?? 0) - offered.length;
  const [templateId, setTemplateId] = useState<string | null>(inbound?.template_id ?? null);
  const [port, setPort] = useState<string | number>(inbound?.port_override ?? "");
  const [tag, setTag] = useState(inbound?.tag ?? "");
  const [certificateId, setCertificateId] = useState<string | null>(inbound?.certificate_id ?? null);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [flags, setFlags] = useState<Record<string, boolean>>({});
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const template = templates.data?.find((x) => x.id === templateId);

  // Editing: the stored values fill the form once the template (and so its variables) is known.
  const stored = inbound?.variable_values;
  useEffect(() => {
    if (template === undefined || stored === undefined) return;
    setTexts(Object.fromEntries(template.variables.map((v) => [v.name, initialText(v, stored[v.name])])));
    const booleans = template.variables.filter((v) => typeof stored[v.name] === "boolean");
    setFlags(Object.fromEntries(booleans.map((v) => [v.name, stored[v.name] === true])));
  }, [template, stored]);

  const save = useChange(
    () => {
      if (template === undefined) throw new Error(t("inbound.pickTemplate"));
      const values = variableValues(template, texts, flags);
      const tagged = tag.trim() ? { tag: tag.trim() } : {};
      if (inbound !== undefined) {
        return inboundsApi.update(
          { server_id: server.id, inbound_id: inbound.id },
          { ...tagged, port_override: Number(port), certificate_id: certificateId, variable_values: values },
        );
      }
      return inboundsApi.create(server.id, {
        ...tagged,
        template_id: template.id,
        port: Number(port),
        ...(certificateId ? { certificate_id: certificateId } : {}),
        variable_values: values,
      });
    },
    {
      invalidates: [keys.servers.inbounds(server.id)],
      onSuccess: (saved) => {
        if (saved.sync_state !== "synced") notifyError(new Error(saved.sync_error ?? t("sync.pending")));
        onClose();
      },
      onError: (error) => {
        const errors: Record<string, string> = {};
        if (error instanceof ApiError) {
          for (const e of error.problem.errors ?? []) {
            const field = e.path.replace(/^body\./, "").replace(/^variable_values\./, "");
            errors[field === "port_override" ? "port" : field] = e.message;
          }
        }
        setFieldErrors(errors);
      },
    },
  );

  const pickTemplate = (id: string | null) => {
    setTemplateId(id);
    const picked = templates.data?.find((x) => x.id === id);
    setTexts(Object.fromEntries((picked?.variables ?? []).map((v) => [v.name, initialText(v)])));
    setFlags({});
    setFieldErrors({});
  };

  return (
    <Modal
      opened
      onClose={onClose}
      title={inbound ? t("inbound.edit", { tag: inbound.tag }) : t("inbound.new")}
      size="lg"
    >
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <Select
            label={t("inbound.template")}
            placeholder={t("inbound.pickTemplate")}
            required
            searchable
            description={
              hidden > 0 && server.core !== null
                ? t("inbound.templatesHidden", { count: hidden, core: server.core })
                : undefined
            }
            data={offered.map((x) => ({
              value: x.id,
              label: `${x.name} (${x.protocol}/${x.network}/${x.security})`,
            }))}
            value={templateId}
            onChange={pickTemplate}
            disabled={inbound !== undefined}
            error={fieldErrors.template_id}
            nothingFoundMessage={t("templates.empty")}
            data-autofocus
          />
          {templates.data?.length === 0 && <StarterOffer compact />}
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
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            disabled={template === undefined}
            label={inbound ? t("common.save") : t("common.create")}
          />
        </Stack>
      </form>
    </Modal>
  );
}
