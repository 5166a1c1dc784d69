// API keys for scripts: listed without secrets, each with the role it acts as (narrowed at creation,
// or the admin's own); a new key's secret is shown once, in a modal that forgets it when closed.
import {
  Alert,
  Button,
  Code,
  Group,
  Modal,
  NumberInput,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../../api/client.ts";
import type { CreatedApiKey, Role } from "../../api/types.ts";
import { ROLES, useMe } from "../../auth/me.ts";
import { useI18n, useT } from "../../i18n/i18n.tsx";
import { useConfirm } from "../../ui/Confirm.tsx";
import { Copy } from "../../ui/Copy.tsx";
import { ErrorAlert, notifyError } from "../../ui/errors.tsx";
import { formatDate } from "../../ui/format.ts";
import { RoleBadge } from "../../ui/RoleBadge.tsx";

function CreateKey({ onCreated }: { onCreated: (key: CreatedApiKey) => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [days, setDays] = useState<string | number>("");
  const [role, setRole] = useState<Role | null>(null);
  const { me } = useMe();
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/api/api-keys", {
          body: {
            name,
            ...(days === "" ? {} : { expires_in_days: Number(days) }),
            ...(role === null ? {} : { role }),
          },
        }),
      ),
    onSuccess: (key) => {
      void queryClient.invalidateQueries({ queryKey: ["api-keys"] });
      setName("");
      setDays("");
      setRole(null);
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
      <Group align="flex-end" wrap="wrap">
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
        <Select
          label={t("apiKeys.role")}
          placeholder={t("apiKeys.ownRole", { role: me === undefined ? "…" : t(`role.${me.role}`) })}
          data={ROLES.map((r) => ({ value: r, label: t(`role.${r}`) }))}
          value={role}
          onChange={(value) => setRole(value as Role | null)}
          clearable
          w={200}
        />
        <Button type="submit" loading={create.isPending}>
          {t("apiKeys.create")}
        </Button>
      </Group>
    </form>
  );
}

export function ApiKeys() {
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
      <Title order={3}>{t("nav.apiKeys")}</Title>
      <Text size="sm" c="dimmed">
        {t("apiKeys.hint")}
      </Text>
      <CreateKey onCreated={setCreated} />
      {keys.error && <ErrorAlert error={keys.error} />}
      {keys.data?.length === 0 && <Text c="dimmed">{t("apiKeys.empty")}</Text>}
      {(keys.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={620}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("apiKeys.name")}</Table.Th>
                <Table.Th>{t("apiKeys.role")}</Table.Th>
                <Table.Th>{t("common.created")}</Table.Th>
                <Table.Th>{t("apiKeys.expires")}</Table.Th>
                <Table.Th>{t("apiKeys.lastUsed")}</Table.Th>
                <Table.Th>
                  <VisuallyHidden>{t("admins.actions")}</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {keys.data?.map((key) => (
                <Table.Tr key={key.id}>
                  <Table.Td>{key.name}</Table.Td>
                  <Table.Td>
                    {key.role === null ? (
                      <Text size="sm" c="dimmed">
                        {t("apiKeys.sameAsMine")}
                      </Text>
                    ) : (
                      <RoleBadge role={key.role} />
                    )}
                  </Table.Td>
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
