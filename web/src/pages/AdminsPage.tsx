// Admins (owners): the team, each with a role; create, change role, disable or enable, set a new
// password, remove a lost second factor, delete. The service keeps an owner who can sign in: its
// 409s (last_owner, cannot_disable_self, cannot_delete_self) are shown with their detail.
import {
  ActionIcon,
  Badge,
  Button,
  Group,
  Menu,
  Modal,
  PasswordInput,
  Select,
  Skeleton,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import type { Admin, AdminInput, AdminUpdate, Role } from "../api/types.ts";
import { ROLES, useMe } from "../auth/me.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { followLink, href } from "../router.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { DotsIcon } from "../ui/icons.tsx";
import { RoleBadge } from "../ui/RoleBadge.tsx";
import { applyFieldErrors } from "./users/CreateUser.tsx";

export const adminsQuery = { queryKey: ["admins"], queryFn: () => unwrap(api.GET("/api/admins")) } as const;

function useRoleOptions() {
  const t = useT();
  return ROLES.map((role) => ({ value: role, label: `${t(`role.${role}`)} — ${t(`role.${role}.hint`)}` }));
}

function CreateAdminModal({ onClose }: { onClose: () => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const roles = useRoleOptions();
  const form = useForm<AdminInput>({ initialValues: { username: "", password: "", role: "operator" } });
  const create = useMutation({
    mutationFn: (body: AdminInput) => unwrap(api.POST("/api/admins", { body })),
    onSuccess: (admin) => {
      void queryClient.invalidateQueries({ queryKey: ["admins"] });
      notifyDone(t("admins.created", { name: admin.username }));
      onClose();
    },
    onError: (error) => {
      applyFieldErrors(form, error);
      notifyError(error);
    },
  });
  return (
    <Modal opened onClose={onClose} title={t("admins.new")}>
      <form onSubmit={form.onSubmit((values) => create.mutate(values))}>
        <Stack>
          <TextInput
            label={t("signIn.username")}
            description={t("admins.usernameHint")}
            required
            data-autofocus
            autoComplete="off"
            {...form.getInputProps("username")}
          />
          <PasswordInput
            label={t("signIn.password")}
            description={t("admins.passwordHint")}
            required
            autoComplete="new-password"
            {...form.getInputProps("password")}
          />
          <Select
            label={t("admins.role")}
            data={roles}
            allowDeselect={false}
            {...form.getInputProps("role")}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={create.isPending}>
              {t("common.create")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

type Dialog = "role" | "password";

function AdminDialog({
  admin,
  dialog,
  onSave,
  isSaving,
  onClose,
}: {
  admin: Admin;
  dialog: Dialog;
  onSave: (update: AdminUpdate) => void;
  isSaving: boolean;
  onClose: () => void;
}) {
  const t = useT();
  const roles = useRoleOptions();
  const [role, setRole] = useState<Role>(admin.role);
  const [password, setPassword] = useState("");
  return (
    <Modal
      opened
      onClose={onClose}
      title={
        dialog === "role"
          ? t("admins.changeRoleOf", { name: admin.username })
          : t("admins.resetPasswordOf", { name: admin.username })
      }
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onSave(dialog === "role" ? { role } : { password });
        }}
      >
        <Stack>
          {dialog === "role" ? (
            <Select
              label={t("admins.role")}
              data={roles}
              value={role}
              allowDeselect={false}
              onChange={(value) => value !== null && setRole(value as Role)}
            />
          ) : (
            <PasswordInput
              label={t("admins.newPassword")}
              description={t("admins.passwordResetHint")}
              required
              minLength={8}
              autoComplete="new-password"
              data-autofocus
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
            />
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={isSaving}>
              {t("common.save")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function AdminRow({ admin, isSelf }: { admin: Admin; isSelf: boolean }) {
  const { t, language } = useI18n();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const [dialog, setDialog] = useState<Dialog>();
  const path = { id: admin.id };
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["admins"] });
    // Changing oneself changes what this page may show.
    if (isSelf) void queryClient.invalidateQueries({ queryKey: ["me"] });
  };
  const update = useMutation({
    mutationFn: (body: AdminUpdate) => unwrap(api.PUT("/api/admins/{id}", { params: { path }, body })),
    onSuccess: () => {
      refresh();
      setDialog(undefined);
      notifyDone(t("common.saved"));
    },
    onError: notifyError,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/admins/{id}", { params: { path } })),
    onSuccess: () => {
      refresh();
      notifyDone(t("admins.deleted", { name: admin.username }));
    },
    onError: notifyError,
  });
  const name = admin.username;
  return (
    <Table.Tr data-testid="admin-row" data-username={name}>
      <Table.Td>
        <Group gap="xs" wrap="nowrap">
          <Text fw={500}>{name}</Text>
          {isSelf && (
            <Badge size="xs" variant="outline" color="gray">
              {t("admins.you")}
            </Badge>
          )}
        </Group>
      </Table.Td>
      <Table.Td>
        <RoleBadge role={admin.role} />
      </Table.Td>
      <Table.Td>
        <Badge color={admin.is_disabled ? "red" : "teal"} variant="light" data-testid="admin-status">
          {admin.is_disabled ? t("admins.disabled") : t("common.active")}
        </Badge>
      </Table.Td>
      <Table.Td>{admin.totp_enabled ? t("totp.on") : t("totp.off")}</Table.Td>
      <Table.Td fz="sm">{formatDate(admin.created_at, language)}</Table.Td>
      <Table.Td>
        <Group gap={4} wrap="nowrap" justify="flex-end">
          <Button
            size="xs"
            variant="subtle"
            component="a"
            href={href(`/audit?actor_id=${admin.id}`)}
            onClick={(e) => followLink(e, `/audit?actor_id=${admin.id}`)}
          >
            {t("audit.entries")}
          </Button>
          <Menu position="bottom-end" withinPortal>
            <Menu.Target>
              <ActionIcon
                variant="subtle"
                color="gray"
                aria-label={t("admins.actionsFor", { name })}
                loading={update.isPending || remove.isPending}
              >
                <DotsIcon />
              </ActionIcon>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Item onClick={() => setDialog("role")}>{t("admins.changeRole")}</Menu.Item>
              {/* Your own password and second factor change on the account page, with proof (409 otherwise). */}
              {!isSelf && (
                <Menu.Item onClick={() => setDialog("password")}>{t("admins.resetPassword")}</Menu.Item>
              )}
              {admin.is_disabled ? (
                <Menu.Item onClick={() => update.mutate({ is_disabled: false })}>
                  {t("admins.enable")}
                </Menu.Item>
              ) : (
                <Menu.Item
                  color="red"
                  onClick={() =>
                    confirm(t("admins.disableConfirm", { name }), () => update.mutate({ is_disabled: true }))
                  }
                >
                  {t("admins.disable")}
                </Menu.Item>
              )}
              {admin.totp_enabled && !isSelf && (
                <Menu.Item
                  color="red"
                  onClick={() =>
                    confirm(t("admins.resetTotpConfirm", { name }), () => update.mutate({ reset_totp: true }))
                  }
                >
                  {t("admins.resetTotp")}
                </Menu.Item>
              )}
              <Menu.Divider />
              <Menu.Item
                color="red"
                onClick={() => confirm(t("admins.deleteConfirm", { name }), () => remove.mutate())}
              >
                {t("common.delete")}
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        </Group>
        {dialog !== undefined && (
          <AdminDialog
            admin={admin}
            dialog={dialog}
            isSaving={update.isPending}
            onSave={(body) => update.mutate(body)}
            onClose={() => setDialog(undefined)}
          />
        )}
        {confirmModal}
      </Table.Td>
    </Table.Tr>
  );
}

export function AdminsPage() {
  const t = useT();
  const { me } = useMe();
  const [isCreating, setCreating] = useState(false);
  const admins = useQuery(adminsQuery);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t("nav.admins")}</Title>
        <Button onClick={() => setCreating(true)}>{t("admins.new")}</Button>
      </Group>
      <Text size="sm" c="dimmed">
        {t("admins.hint")}
      </Text>
      {admins.error && <ErrorAlert error={admins.error} />}
      {admins.isLoading && <Skeleton h={120} />}
      {(admins.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={680}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("signIn.username")}</Table.Th>
                <Table.Th>{t("admins.role")}</Table.Th>
                <Table.Th>{t("admins.status")}</Table.Th>
                <Table.Th>{t("totp.title")}</Table.Th>
                <Table.Th>{t("common.created")}</Table.Th>
                <Table.Th>
                  <VisuallyHidden>{t("admins.actions")}</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {admins.data?.map((admin) => (
                <AdminRow key={admin.id} admin={admin} isSelf={admin.id === me?.id} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {isCreating && <CreateAdminModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
