// API keys for scripts: listed without secrets; a new key's secret is shown once, in a modal that
// forgets it when closed.
import {
  Alert,
  Button,
  Code,
  Group,
  Modal,
  NumberInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import type { CreatedApiKey } from "../api/types.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { Copy } from "../ui/Copy.tsx";
import { ErrorAlert, notifyError } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";

function CreateKey({ onCreated }: { onCreated: (key: CreatedApiKey) => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [days, setDays] = useState<string | number>("");
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/api/api-keys", {
          body: { name, ...(days === "" ? {} : { expires_in_days: Number(days) }) },
        }),
      ),
    onSuccess: (key) => {
      void queryClient.invalidateQueries({ queryKey: ["api-keys"] });
      setName("");
      setDays("");
      onCreated(key);
    },
    onError: notifyError,
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <Group align="flex-end">
        <TextInput
          label={t("apiKeys.name")}
          required
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
        />
        <NumberInput
          label={t("apiKeys.expiresInDays")}
          placeholder={t("apiKeys.never")}
          min={1}
          value={days}
          onChange={setDays}
          w={160}
        />
        <Button type="submit" loading={create.isPending}>
          {t("apiKeys.create")}
        </Button>
      </Group>
    </form>
  );
}

export function ApiKeysPage() {
  const { t, language } = useI18n();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const [created, setCreated] = useState<CreatedApiKey>();
  const keys = useQuery({ queryKey: ["api-keys"], queryFn: () => unwrap(api.GET("/api/api-keys")) });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE("/api/api-keys/{id}", { params: { path: { id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["api-keys"] }),
    onError: notifyError,
  });
  return (
    <Stack>
      <Title order={2}>{t("nav.apiKeys")}</Title>
      <Text size="sm" c="dimmed">
        {t("apiKeys.hint")}
      </Text>
      <CreateKey onCreated={setCreated} />
      {keys.error && <ErrorAlert error={keys.error} />}
      {keys.data?.length === 0 && <Text c="dimmed">{t("apiKeys.empty")}</Text>}
      {(keys.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={520}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("apiKeys.name")}</Table.Th>
                <Table.Th>{t("common.created")}</Table.Th>
                <Table.Th>{t("apiKeys.expires")}</Table.Th>
                <Table.Th>{t("apiKeys.lastUsed")}</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {keys.data?.map((key) => (
                <Table.Tr key={key.id}>
                  <Table.Td>{key.name}</Table.Td>
                  <Table.Td>{formatDate(key.created_at, language)}</Table.Td>
                  <Table.Td>
                    {key.expires_at ? formatDate(key.expires_at, language) : t("apiKeys.never")}
                  </Table.Td>
                  <Table.Td>{formatDate(key.last_used_at, language)}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      color="red"
                      variant="subtle"
                      onClick={() =>
                        confirm(t("apiKeys.deleteConfirm", { name: key.name }), () => remove.mutate(key.id))
                      }
                    >
                      {t("common.delete")}
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Modal
        opened={created !== undefined}
        onClose={() => setCreated(undefined)}
        title={t("apiKeys.createdTitle", { name: created?.name ?? "" })}
      >
        <Stack>
          <Alert color="yellow">{t("apiKeys.shownOnce")}</Alert>
          <Group wrap="nowrap" gap="xs">
            <Code data-testid="api-key-secret" style={{ wordBreak: "break-all" }}>
              {created?.key ?? ""}
            </Code>
            <Copy value={created?.key ?? ""} label={t("apiKeys.copy")} />
          </Group>
          <Button onClick={() => setCreated(undefined)}>{t("apiKeys.stored")}</Button>
        </Stack>
      </Modal>
      {confirmModal}
    </Stack>
  );
}
