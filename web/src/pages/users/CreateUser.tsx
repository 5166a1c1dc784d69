// "New user": one dialog for everything a user starts with: name (or a prefix and a count, for many
// users at once), Telegram ID, comment, data limit, reset period, expiry or on hold, and the inbounds
// to grant; or a plan (which decides the limits, the expiry and the groups: those fields are shown
// locked and not sent; for one user or a batch) and groups to join (one user: the bulk create takes
// none without a plan). One request (POST /api/users with inbound_ids, or POST /api/users/bulk): the service
// checks every inbound first and makes all of it or nothing; its field errors land on their inputs.
import {
  Button,
  Modal,
  MultiSelect,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Text,
  TextInput,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { useGroups, usePlans } from "../../api/groups.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { useAllInbounds } from "../../api/servers.ts";
import { usersApi } from "../../api/users.ts";
import { useCan } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";
import { navigate } from "../../router.tsx";
import { applyFieldErrors, ErrorAlert } from "../../ui/errors.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";
import { PLAN_DECIDES } from "./planDecides.ts";
import { planValues } from "./plans.tsx";
import { bodyOf, LimitFields, NEW_USER, UserFields, type UserValues } from "./userForm.tsx";

type Values = UserValues & {
  inbound_ids: string[];
  group_ids: string[];
  plan_id: string | null;
  next_plan_id: string | null;
  prefix: string;
  count: number | string;
};
type Mode = "one" | "many";

function CreateUserModal({ onClose }: { onClose: () => void }) {
  const t = useT();
  const can = useCan();
  const canGrant = can("access.write") && can("servers.read") && can("inbounds.read");
  const { choices, isLoading, error } = useAllInbounds(canGrant);
  const [mode, setMode] = useState<Mode>("one");
  const canJoin = can("access.write") && can("inbounds.read");
  const plans = usePlans();
  const groups = useGroups(canJoin);
  const form = useForm<Values>({
    initialValues: {
      ...NEW_USER,
      inbound_ids: [],
      group_ids: [],
      plan_id: null,
      next_plan_id: null,
      prefix: "",
      count: 10,
    },
  });
  const plan = plans.data?.find((p) => p.id === form.values.plan_id);
  const pickPlan = (id: string | null) => {
    form.setValues({ plan_id: id, ...planValues(plans.data?.find((p) => p.id === id)) });
  };
  const create = useChange(
    async (v: Values) => {
      const { name: _name, telegram_id: _telegram, ...shared } = bodyOf(v);
      const inbounds = v.inbound_ids.length > 0 ? { inbound_ids: v.inbound_ids } : {};
      const next = v.next_plan_id === null ? {} : { next_plan_id: v.next_plan_id };
      if (v.plan_id !== null) {
        // The plan decides these: sending any of them as well is a 400.
        const one = { ...bodyOf(v), ...inbounds, ...next, plan_id: v.plan_id };
        const many = { ...shared, ...inbounds, ...next, plan_id: v.plan_id };
        for (const field of PLAN_DECIDES) {
          delete one[field];
          delete many[field];
        }
        if (mode === "one") return { one: await usersApi.create(one) };
        return { many: await usersApi.createMany({ ...many, prefix: v.prefix, count: Number(v.count) }) };
      }
      const joined = v.group_ids.length > 0 ? { group_ids: v.group_ids } : {};
      if (mode === "one")
        return { one: await usersApi.create({ ...bodyOf(v), ...inbounds, ...joined, ...next }) };
      return {
        many: await usersApi.createMany({
          ...shared,
          ...inbounds,
          ...next,
          prefix: v.prefix,
          count: Number(v.count),
        }),
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
          {(plans.data?.length ?? 0) > 0 && (
            <Select
              label={t("plans.plan")}
              description={t("plans.planHint")}
              placeholder={t("plans.noPlan")}
              data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              value={form.values.plan_id}
              onChange={pickPlan}
              clearable
              searchable
              data-testid="create-user-plan"
              error={form.errors.plan_id}
            />
          )}
          {plan !== undefined && (
            <Text size="sm" c="dimmed" data-testid="create-user-plan-note">
              {t("plans.decides", { name: plan.name })}
            </Text>
          )}
          <LimitFields form={form} readOnly={plan !== undefined} />
          {(mode === "one" || plan !== undefined) && canJoin && (groups.data?.length ?? 0) > 0 && (
            <MultiSelect
              label={t("plans.joinGroups")}
              description={
                plan === undefined ? t("plans.joinGroupsHint") : t("plans.decides", { name: plan.name })
              }
              data={(groups.data ?? []).map((g) => ({ value: g.id, label: g.name }))}
              value={plan === undefined ? form.values.group_ids : plan.group_ids}
              onChange={(value) => form.setFieldValue("group_ids", value)}
              readOnly={plan !== undefined}
              searchable
              clearable={plan === undefined}
              data-testid="create-user-groups"
              error={form.errors.group_ids}
            />
          )}
          {(plans.data?.length ?? 0) > 0 && (
            <Select
              label={t("plans.nextPlan")}
              description={t("plans.nextPlanHint")}
              placeholder={t("plans.noPlan")}
              data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              clearable
              searchable
              data-testid="create-user-next-plan"
              {...form.getInputProps("next_plan_id")}
            />
          )}
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
