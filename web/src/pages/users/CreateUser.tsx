// "New user": one dialog for everything a user starts with: name (or a prefix and a count, for many
// users at once), Telegram ID, comment, data limit, reset period, expiry or on hold, and the inbounds
// to grant. One request (POST /api/users with inbound_ids, or POST /api/users/bulk): the service
// checks every inbound first and makes all of it or nothing; its field errors land on their inputs.
import { Button, Modal, MultiSelect, NumberInput, SegmentedControl, Stack, TextInput } from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { useAllInbounds } from "../../api/servers.ts";
import { usersApi } from "../../api/users.ts";
import { useCan } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";
import { navigate } from "../../router.tsx";
import { applyFieldErrors, ErrorAlert } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";
import { bodyOf, LimitFields, NEW_USER, UserFields, type UserValues } from "./userForm.tsx";

type Values = UserValues & { inbound_ids: string[]; prefix: string; count: number | string };
type Mode = "one" | "many";

function CreateUserModal({ onClose }: { onClose: () => void }) {
  const t = useT();
  const can = useCan();
  const canGrant = can("access.write") && can("servers.read") && can("inbounds.read");
  const { choices, isLoading, error } = useAllInbounds(canGrant);
  const [mode, setMode] = useState<Mode>("one");
  const form = useForm<Values>({ initialValues: { ...NEW_USER, inbound_ids: [], prefix: "", count: 10 } });
  const create = useChange(
    async (v: Values) => {
      const { name: _name, telegram_id: _telegram, ...shared } = bodyOf(v);
      const inbounds = v.inbound_ids.length > 0 ? { inbound_ids: v.inbound_ids } : {};
      if (mode === "one") return { one: await usersApi.create({ ...bodyOf(v), ...inbounds }) };
      return {
        many: await usersApi.createMany({ ...shared, ...inbounds, prefix: v.prefix, count: Number(v.count) }),
      };
    },
    {
      invalidates: [keys.users.all],
      done: (result) =>
        result.many ? t("users.createdMany", { count: result.many.created }) : t("users.created"),
      onSuccess: (result) => {
        onClose();
        if (result.one) navigate(`/users/${result.one.id}`);
      },
      onError: (e) => applyFieldErrors(form, e),
    },
  );
  return (
    <Modal opened onClose={onClose} title={t("users.new")} size="lg">
      <form onSubmit={form.onSubmit((values) => create.mutate(values))} data-testid="create-user-form">
        <Stack>
          <SegmentedControl
            value={mode}
            onChange={(value) => setMode(value === "many" ? "many" : "one")}
            data={[
              { value: "one", label: t("users.createOne") },
              { value: "many", label: t("users.createMany") },
            ]}
            aria-label={t("users.createMode")}
          />
          {mode === "one" ? (
            <UserFields form={form} autoFocus />
          ) : (
            <>
              <TextInput
                label={t("users.prefix")}
                description={t("users.prefixHint")}
                required
                data-autofocus
                {...form.getInputProps("prefix")}
              />
              <NumberInput
                label={t("users.count")}
                min={1}
                max={1000}
                allowDecimal={false}
                required
                {...form.getInputProps("count")}
              />
            </>
          )}
          <LimitFields form={form} />
          {canGrant && (
            <>
              {error !== undefined && <ErrorAlert error={error} />}
              <MultiSelect
                label={t("users.inbounds")}
                description={t("users.inboundsHint")}
                placeholder={isLoading ? t("common.loading") : t("grants.pickInbound")}
                data={choices.map((c) => ({ value: c.inbound.id, label: c.label }))}
                searchable
                clearable
                nothingFoundMessage={t("grants.noInbounds")}
                data-testid="create-user-inbounds"
                {...form.getInputProps("inbound_ids")}
              />
            </>
          )}
          <FormButtons onCancel={onClose} isSaving={create.isPending} label={t("common.create")} />
        </Stack>
      </form>
    </Modal>
  );
}

export function CreateUserButton() {
  const t = useT();
  const [opened, setOpened] = useState(false);
  return (
    <>
      <Button onClick={() => setOpened(true)}>{t("users.new")}</Button>
      {opened && <CreateUserModal onClose={() => setOpened(false)} />}
    </>
  );
}
