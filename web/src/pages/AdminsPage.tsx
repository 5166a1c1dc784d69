// Admins (owners): the team, each with a role, the scope of each user permission (their own users or
// all) and the reseller quotas (docs/RESELLERS.md); create, change role, scope and quotas, disable
// or enable (optionally with the users they own), set a new password, remove a lost second factor,
// delete. The service keeps an owner who can sign in: its
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
  Stack,
  Table,
  Text,
  TextInput,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { adminsApi, useAdmins } from "../api/admin.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import type { Admin, AdminInput, AdminUpdate, Role } from "../api/types.ts";
import { ROLES, useMe } from "../auth/me.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { followLink, href } from "../router.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { applyFieldErrors } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { DotsIcon } from "../ui/icons.tsx";
import { RoleBadge } from "../ui/RoleBadge.tsx";
import { DataTable, FormButtons, ListState, PageHeader } from "../ui/Scaffold.tsx";
import {
  asResellerForm,
  QuotaSummary,
  ResellerFields,
  type ResellerValues,
  resellerBody,
  resellerValues,
} from "./admins/ResellerFields.tsx";

function useRoleOptions() {
  const t = useT();
  return ROLES.map((role) => ({ value: role, label: `${t(`role.${role}`)} — ${t(`role.${role}.hint`)}` }));
}

type CreateValues = Pick<AdminInput, "username" | "password" | "role"> & ResellerValues;

function CreateAdminModal({ onClose }: { onClose: () => void }) {
  const t = useT();
  const roles = useRoleOptions();
  const form = useForm<CreateValues>({
    initialValues: { username: "", password: "", role: "operator", ...resellerValues() },
  });
  const create = useChange(
    ({ username, password, role, ...reseller }: CreateValues) =>
      adminsApi.create({ username, password, role, ...(role === "owner" ? {} : resellerBody(reseller)) }),
    {
      invalidates: [keys.admins.all],
      done: (admin) => t("admins.created", { name: admin.username }),
      onSuccess: onClose,
      onError: (error) => applyFieldErrors(form, error),
    },
  );
  return (
    <Modal opened onClose={onClose} title={t("admins.new")} size="lg">
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
          {form.values.role !== "owner" && <ResellerFields form={asResellerForm(form)} />}
          <FormButtons onCancel={onClose} isSaving={create.isPending} label={t("common.create")} />
        </Stack>
      </form>
    </Modal>
  );
}

type Dialog = "role" | "password" | "reach";

function ReachDialog({
  admin,
  onSave,
  isSaving,
  onClose,
}: {
  admin: Admin;
  onSave: (update: AdminUpdate) => void;
  isSaving: boolean;
  onClose: () => void;
}) {
  const t = useT();
  const form = useForm<ResellerValues>({ initialValues: resellerValues(admin) });
  return (
    <Modal opened onClose={onClose} title={t("reseller.titleOf", { name: admin.username })} size="lg">
      <form onSubmit={form.onSubmit((values) => onSave(resellerBody(values)))} data-testid="reach-form">
        <Stack>
          <ResellerFields form={form} />
          <FormButtons onCancel={onClose} isSaving={isSaving} />
        </Stack>
      </form>
    </Modal>
  );
}

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
          <FormButtons onCancel={onClose} isSaving={isSaving} />
        </Stack>
      </form>
    </Modal>
  );
}

function AdminRow({ admin, isSelf }: { admin: Admin; isSelf: boolean }) {
  const { t, language } = useI18n();
  const [confirm, confirmModal] = useConfirm();
  const [dialog, setDialog] = useState<Dialog>();
  // Changing oneself changes what this page may show.
  const invalidates = isSelf ? [keys.admins.all, keys.me()] : [keys.admins.all];
  const update = useChange((body: AdminUpdate) => adminsApi.update(admin.id, body), {
    invalidates,
    done: t("common.saved"),
    onSuccess: () => setDialog(undefined),
  });
  const remove = useChange(() => adminsApi.remove(admin.id), {
    invalidates,
    done: t("admins.deleted", { name: admin.username }),
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
      <Table.Td>
        <QuotaSummary admin={admin} />
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
              {admin.role !== "owner" && (
                <Menu.Item onClick={() => setDialog("reach")}>{t("reseller.edit")}</Menu.Item>
              )}
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
              {!admin.is_disabled && admin.owned.users > 0 && (
                <Menu.Item
                  color="red"
                  onClick={() =>
                    confirm(t("reseller.disableWithUsersConfirm", { name, count: admin.owned.users }), () =>
                      update.mutate({ is_disabled: true, disable_users: true }),
                    )
                  }
                >
                  {t("reseller.disableWithUsers")}
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
        {dialog === "reach" && (
          <ReachDialog
            admin={admin}
            isSaving={update.isPending}
            onSave={(body) => update.mutate(body)}
            onClose={() => setDialog(undefined)}
          />
        )}
        {dialog !== undefined && dialog !== "reach" && (
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
  const admins = useAdmins();
  return (
    <Stack>
      <PageHeader title={t("nav.admins")} hint={t("admins.hint")}>
        <Button onClick={() => setCreating(true)}>{t("admins.new")}</Button>
      </PageHeader>
      <ListState query={admins} empty={null}>
        {(list) => (
          <DataTable
            minWidth={820}
            columns={[
              "signIn.username",
              "admins.role",
              "admins.status",
              "reseller.quotasColumn",
              "totp.title",
              "common.created",
            ]}
            actions
          >
            {list.map((admin) => (
              <AdminRow key={admin.id} admin={admin} isSelf={admin.id === me?.id} />
            ))}
          </DataTable>
        )}
      </ListState>
      {isCreating && <CreateAdminModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
