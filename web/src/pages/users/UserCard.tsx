// The user page's one form: the user's fields, then "Limits and expiry" (the status badge with
// enable/disable, usage and expiry as in the table, and the limit fields). One Save sends
// PUT /api/users/{id} with only the fields changed; an error lands on its field.
import { Button, Card, Divider, Group, SimpleGrid, Stack, Text, Title } from "@mantine/core";
import { useForm } from "@mantine/form";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { User, UserUpdate } from "../../api/types.ts";
import { usersApi } from "../../api/users.ts";
import { useI18n } from "../../i18n/i18n.tsx";
import { applyFieldErrors } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";
import { ExpiryCell, UsageCell, UserStatusBadge } from "./lifecycle.tsx";
import { AnnounceField, bodyOf, LimitFields, UserFields, type UserValues, valuesOf } from "./userForm.tsx";

export function UserCard({ user, canEdit }: { user: User; canEdit: boolean }) {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const form = useForm<UserValues>({ initialValues: valuesOf(user) });
  // The stored user changed (saved here, or refetched): show it, with nothing left dirty.
  useEffect(() => {
    form.setInitialValues(valuesOf(user));
    form.setValues(valuesOf(user));
    form.resetDirty();
  }, [user.updated_at]);
  const save = useChange((body: UserUpdate) => usersApi.update(user.id, body), {
    // the fair-use card shows the limits applied (device_limit, ip_limit)
    invalidates: [keys.users.lists(), keys.users.devices(user.id), keys.users.fairUse(user.id)],
    done: t("common.saved"),
    onSuccess: (saved) => {
      queryClient.setQueryData(keys.users.one(saved.id), saved);
    },
    onError: (error) => applyFieldErrors(form, error),
  });
  const setStatus = (status: "active" | "disabled") => save.mutate({ status });
  return (
    <Card withBorder data-testid="limits-card">
      <form onSubmit={form.onSubmit((values) => save.mutate(bodyOf(values, valuesOf(user))))}>
        <Stack>
          <UserFields form={form} readOnly={!canEdit} />
          <AnnounceField form={form} readOnly={!canEdit} />
          <Divider />
          <Group justify="space-between">
            <Title order={3}>{t("limits.title")}</Title>
            <UserStatusBadge status={user.status} />
          </Group>
          <SimpleGrid cols={2}>
            <div>
              <Text size="xs" c="dimmed">
                {t("limits.usage")}
              </Text>
              <UsageCell user={user} />
            </div>
            <div>
              <Text size="xs" c="dimmed">
                {t("limits.expiry")}
              </Text>
              <ExpiryCell expireAt={user.expire_at} />
            </div>
          </SimpleGrid>
          {canEdit && (
            <Group gap="xs">
              <Button
                size="xs"
                variant="light"
                color={user.status === "disabled" ? undefined : "red"}
                loading={save.isPending}
                onClick={() => setStatus(user.status === "disabled" ? "active" : "disabled")}
              >
                {user.status === "disabled" ? t("limits.enable") : t("limits.disable")}
              </Button>
            </Group>
          )}
          <LimitFields form={form} readOnly={!canEdit} />
          {canEdit && (
            <FormButtons isSaving={save.isPending} disabled={!form.isDirty()} testId="limits-save" />
          )}
        </Stack>
      </form>
    </Card>
  );
}
