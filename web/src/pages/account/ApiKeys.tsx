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
} from "@mantine/core";
import { useState } from "react";
import { accountApi, useApiKeys } from "../../api/admin.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { CreatedApiKey, Role } from "../../api/types.ts";
import { ROLES, useMe } from "../../auth/me.ts";
import { useI18n, useT } from "../../i18n/i18n.tsx";
import { ConfirmButton } from "../../ui/Confirm.tsx";
import { Copy } from "../../ui/Copy.tsx";
import { formatDate } from "../../ui/format.ts";
import { RoleBadge } from "../../ui/RoleBadge.tsx";
import { DataTable, ListState } from "../../ui/Scaffold.tsx";

function CreateKey({ onCreated }: { onCreated: (key: CreatedApiKey) => void }) {
  const t = useT();
  const [name, setName] = useState("");
  const [days, setDays] = useState<string | number>("");
  const [role, setRole] = useState<Role | null>(null);
  const { me } = useMe();
  const create = useChange(
    () =>
      accountApi.createKey({
        name,
        ...(days === "" ? {} : { expires_in_days: Number(days) }),
        ...(role === null ? {} : { role }),
      }),
    {
      invalidates: [keys.apiKeys.all],
      onSuccess: (key) => {
        setName("");
        setDays("");
        setRole(null);
        onCreated(key);
      },
    },
  );
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
  const [created, setCreated] = useState<CreatedApiKey>();
  const apiKeys = useApiKeys();
  const remove = useChange(accountApi.removeKey, { invalidates: [keys.apiKeys.all] });
  return (
    <Stack>
      <Title order={3}>{t("nav.apiKeys")}</Title>
      <Text size="sm" c="dimmed">
        {t("apiKeys.hint")}
      </Text>
      <CreateKey onCreated={setCreated} />
      <ListState query={apiKeys} empty={<Text c="dimmed">{t("apiKeys.empty")}</Text>}>
        {(list) => (
          <DataTable
            minWidth={620}
            columns={[
              "apiKeys.name",
              "apiKeys.role",
              "common.created",
              "apiKeys.expires",
              "apiKeys.lastUsed",
            ]}
            actions
          >
            {list.map((key) => (
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
                  <ConfirmButton
                    size="xs"
                    variant="subtle"
                    question={t("apiKeys.deleteConfirm", { name: key.name })}
                    onConfirm={() => remove.mutate(key.id)}
                  >
                    {t("common.delete")}
                  </ConfirmButton>
                </Table.Td>
              </Table.Tr>
            ))}
          </DataTable>
        )}
      </ListState>
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
    </Stack>
  );
}
