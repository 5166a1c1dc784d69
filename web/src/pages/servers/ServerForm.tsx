// Register or edit a server. api_credentials is write-only: the form never shows stored ones, it
// only says whether there are any, and sends a new document (or null to remove them).

import {
  Checkbox,
  Group,
  Modal,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Text,
  Textarea,
  TextInput,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useCertificates } from "../../api/fleet.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { serversApi } from "../../api/servers.ts";
import type { Server } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { navigate } from "../../router.tsx";
import { applyFieldErrors } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";

type Values = {
  name: string;
  hostname: string;
  grpc_hostname: string;
  grpc_port: number | string;
  connection: "direct" | "node";
  default_certificate_id: string | null;
  api_credentials: string;
  remove_credentials: boolean;
};

export function ServerFormModal({ server, onClose }: { server?: Server; onClose: () => void }) {
  const t = useT();
  const certificates = useCertificates();
  const form = useForm<Values>({
    initialValues: {
      name: server?.name ?? "",
      hostname: server?.hostname ?? "",
      grpc_hostname: server?.grpc_hostname ?? "",
      grpc_port: server?.grpc_port ?? 2053,
      connection: server?.connection ?? "direct",
      default_certificate_id: server?.default_certificate_id ?? null,
      api_credentials: "",
      remove_credentials: false,
    },
  });
  const save = useChange(
    async (v: Values) => {
      const body = {
        name: v.name,
        hostname: v.hostname,
        ...(v.grpc_hostname.trim() ? { grpc_hostname: v.grpc_hostname.trim() } : {}),
        grpc_port: Number(v.grpc_port),
        connection: v.connection,
        ...(v.default_certificate_id ? { default_certificate_id: v.default_certificate_id } : {}),
        ...(v.api_credentials.trim() ? { api_credentials: v.api_credentials.trim() } : {}),
      };
      if (server === undefined) return serversApi.create(body);
      return serversApi.update(server.id, {
        ...body,
        default_certificate_id: v.default_certificate_id,
        ...(v.remove_credentials ? { api_credentials: null } : {}),
      });
    },
    {
      invalidates: [keys.servers.all],
      onSuccess: (saved) => {
        onClose();
        if (server === undefined) navigate(`/servers/${saved.id}`);
      },
      onError: (error) => applyFieldErrors(form, error),
    },
  );
  return (
    <Modal opened onClose={onClose} title={server ? t("server.edit") : t("server.new")} size="lg">
      <form onSubmit={form.onSubmit((v) => save.mutate(v))}>
        <Stack>
          <TextInput label={t("server.name")} required data-autofocus {...form.getInputProps("name")} />
          <TextInput
            label={t("server.hostname")}
            description={t("server.hostnameHint")}
            required
            {...form.getInputProps("hostname")}
          />
          <SegmentedControl
            aria-label={t("server.connection")}
            data={(["direct", "node"] as const).map((value) => ({
              value,
              label: t(`server.connection.${value}`),
            }))}
            {...form.getInputProps("connection")}
            onChange={(value) => {
              const connection = value === "node" ? "node" : "direct";
              form.setFieldValue("connection", connection);
              // The agent's port by default (docs/NODES.md), the core's API port otherwise.
              if (server === undefined) form.setFieldValue("grpc_port", connection === "node" ? 2096 : 2053);
            }}
          />
          <Text size="xs" c="dimmed" mt={-8}>
            {t(
              form.values.connection === "node" ? "server.connectionNodeHint" : "server.connectionDirectHint",
            )}
          </Text>
          <Group grow align="flex-start">
            <TextInput
              label={t("server.grpcHostname")}
              placeholder={form.values.hostname}
              {...form.getInputProps("grpc_hostname")}
            />
            <NumberInput
              label={t("server.grpcPort")}
              min={1}
              max={65535}
              required
              {...form.getInputProps("grpc_port")}
            />
          </Group>
          <Select
            label={t("server.defaultCertificate")}
            clearable
            data={(certificates.data ?? []).map((c) => ({ value: c.id, label: `${c.name} (${c.domain})` }))}
            {...form.getInputProps("default_certificate_id")}
          />
          <Textarea
            label={t("server.apiCredentials")}
            description={
              server?.has_credentials ? t("server.credentialsStored") : t("server.credentialsHint")
            }
            autosize
            minRows={2}
            ff="monospace"
            autoComplete="off"
            {...form.getInputProps("api_credentials")}
          />
          {server?.has_credentials && (
            <Checkbox
              label={t("server.removeCredentials")}
              {...form.getInputProps("remove_credentials", { type: "checkbox" })}
            />
          )}
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            label={server ? t("common.save") : t("common.create")}
          />
        </Stack>
      </form>
    </Modal>
  );
}
