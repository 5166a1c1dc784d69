// Plans (issue 49): what a user gets in one step, at creation, at renewal or as their next plan. The
// list with every term, and one dialog to create or edit a plan (every field the API has, its groups).
// Changing or deleting a plan changes no user: what a user got from a plan is theirs.
import {
  ActionIcon,
  Badge,
  Button,
  Checkbox,
  Group,
  Modal,
  MultiSelect,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Tooltip,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { plansApi, useGroups, usePlans } from "../api/groups.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import type { Plan, PlanInput } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { applyFieldErrors } from "../ui/errors.tsx";
import { TrashIcon } from "../ui/icons.tsx";
import { Bytes, Iso } from "../ui/Num.tsx";
import { DataTable, FormButtons, ListState, PageHeader } from "../ui/Scaffold.tsx";
import { UNITS, type Unit } from "./users/userForm.tsx";

const RESETS = ["no_reset", "day", "week", "month", "month_rolling", "year"] as const;

type Values = {
  name: string;
  data_limit_bytes: number | string;
  unit: Unit;
  data_limit_reset: Plan["data_limit_reset"];
  duration_days: number | string;
  start_on_hold: boolean;
  on_hold_timeout_days: number | string;
  ip_limit: number | string;
  device_limit: number | string;
  renew_from: Plan["renew_from"];
  reset_usage: boolean;
  group_ids: string[];
};

const NEW_PLAN: Values = {
  name: "",
  data_limit_bytes: "",
  unit: "GiB",
  data_limit_reset: "no_reset",
  duration_days: "",
  start_on_hold: false,
  on_hold_timeout_days: "",
  ip_limit: "",
  device_limit: "",
  renew_from: "expiry",
  reset_usage: false,
  group_ids: [],
};

function valuesOf(plan: Plan): Values {
  const limit = plan.data_limit_bytes;
  const unit: Unit = limit !== null && limit > 0 && limit % UNITS.GiB !== 0 ? "MiB" : "GiB";
  return {
    name: plan.name,
    data_limit_bytes: limit === null ? "" : Number((limit / UNITS[unit]).toFixed(3)),
    unit,
    data_limit_reset: plan.data_limit_reset,
    duration_days: plan.duration_days ?? "",
    start_on_hold: plan.start_on_hold,
    on_hold_timeout_days: plan.on_hold_timeout_days ?? "",
    ip_limit: plan.ip_limit ?? "",
    device_limit: plan.device_limit ?? "",
    renew_from: plan.renew_from,
    reset_usage: plan.reset_usage,
    group_ids: plan.group_ids,
  };
}

const orNull = (value: number | string) => (value === "" ? null : Number(value));

/** Every term, as the API names it (a create and an update take the same fields). */
function bodyOf(v: Values): PlanInput {
  return {
    name: v.name,
    data_limit_bytes:
      v.data_limit_bytes === "" ? null : Math.round(Number(v.data_limit_bytes) * UNITS[v.unit]),
    data_limit_reset: v.data_limit_reset,
    duration_days: orNull(v.duration_days),
    start_on_hold: v.start_on_hold,
    on_hold_timeout_days: v.start_on_hold ? orNull(v.on_hold_timeout_days) : null,
    ip_limit: orNull(v.ip_limit),
    device_limit: orNull(v.device_limit),
    renew_from: v.renew_from,
    reset_usage: v.reset_usage,
    group_ids: v.group_ids,
  };
}

function PlanModal({ plan, onClose }: { plan?: Plan; onClose: () => void }) {
  const t = useT();
  const can = useCan();
  const groups = useGroups(can("inbounds.read"));
  const form = useForm<Values>({ initialValues: plan === undefined ? NEW_PLAN : valuesOf(plan) });
  const save = useChange(
    (values: Values) =>
      plan === undefined ? plansApi.create(bodyOf(values)) : plansApi.update(plan.id, bodyOf(values)),
    {
      invalidates: [keys.plans.all],
      done: plan === undefined ? t("plans.created") : t("common.saved"),
      onSuccess: onClose,
      onError: (e) => applyFieldErrors(form, e),
    },
  );
  return (
    <Modal opened onClose={onClose} title={plan === undefined ? t("plans.new") : t("plans.edit")} size="lg">
      <form onSubmit={form.onSubmit((values) => save.mutate(values))} data-testid="plan-form">
        <Stack>
          <TextInput
            label={t("plans.name")}
            required
            maxLength={64}
            data-autofocus
            {...form.getInputProps("name")}
          />
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <NumberInput
              label={t("limits.dataLimit")}
              description={t("limits.dataLimitHint")}
              min={0}
              decimalScale={3}
              data-testid="plan-data"
              {...form.getInputProps("data_limit_bytes")}
            />
            <Select
              label={t("limits.unit")}
              data={Object.keys(UNITS)}
              allowDeselect={false}
              {...form.getInputProps("unit")}
            />
          </SimpleGrid>
          <Select
            label={t("limits.reset")}
            data={RESETS.map((r) => ({ value: r, label: t(`limits.reset.${r}`) }))}
            allowDeselect={false}
            data-testid="plan-reset"
            {...form.getInputProps("data_limit_reset")}
          />
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <NumberInput
              label={t("plans.durationDays")}
              description={t("plans.durationDaysHint")}
              min={1}
              max={36_600}
              allowDecimal={false}
              data-testid="plan-days"
              {...form.getInputProps("duration_days")}
            />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <NumberInput
              label={t("limits.deviceLimit")}
              description={t("limits.deviceLimitHint")}
              min={0}
              max={1000}
              allowDecimal={false}
              {...form.getInputProps("device_limit")}
            />
            <NumberInput
              label={t("limits.ipLimit")}
              description={t("limits.ipLimitHint")}
              min={0}
              max={1000}
              allowDecimal={false}
              {...form.getInputProps("ip_limit")}
            />
          </SimpleGrid>
          <Checkbox
            label={t("plans.startOnHold")}
            description={t("plans.startOnHoldHint")}
            {...form.getInputProps("start_on_hold", { type: "checkbox" })}
          />
          {form.values.start_on_hold && (
            <NumberInput
              label={t("plans.onHoldTimeoutDays")}
              description={t("plans.onHoldTimeoutDaysHint")}
              min={1}
              max={36_600}
              allowDecimal={false}
              {...form.getInputProps("on_hold_timeout_days")}
            />
          )}
          <Stack gap={4}>
            <Text size="sm" fw={500} id="plan-renew-from">
              {t("plans.renewFrom")}
            </Text>
            <SegmentedControl
              aria-labelledby="plan-renew-from"
              data={[
                { value: "expiry", label: t("plans.renewFrom.expiry") },
                { value: "now", label: t("plans.renewFrom.now") },
              ]}
              {...form.getInputProps("renew_from")}
            />
          </Stack>
          <Checkbox
            label={t("plans.resetUsage")}
            description={t("plans.resetUsageHint")}
            data-testid="plan-reset-usage"
            {...form.getInputProps("reset_usage", { type: "checkbox" })}
          />
          {can("inbounds.read") && (
            <MultiSelect
              label={t("plans.groups")}
              description={t("plans.groupsHint")}
              data={(groups.data ?? []).map((g) => ({ value: g.id, label: g.name }))}
              searchable
              clearable
              data-testid="plan-groups"
              {...form.getInputProps("group_ids")}
            />
          )}
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            label={plan === undefined ? t("common.create") : t("common.save")}
            testId="plan-save"
          />
        </Stack>
      </form>
    </Modal>
  );
}

/** "50.00 GiB / month", "Unlimited". */
export function PlanLimit({ plan }: { plan: Pick<Plan, "data_limit_bytes" | "data_limit_reset"> }) {
  const t = useT();
  if (plan.data_limit_bytes === null) return <>{t("plans.unlimited")}</>;
  return (
    <>
      <Bytes value={plan.data_limit_bytes} />
      {plan.data_limit_reset !== "no_reset" && ` · ${t(`limits.reset.${plan.data_limit_reset}`)}`}
    </>
  );
}

export function PlansPage() {
  const t = useT();
  const can = useCan();
  const plans = usePlans();
  const groups = useGroups(can("inbounds.read"));
  const [editing, setEditing] = useState<Plan | "new">();
  const [confirm, confirmModal] = useConfirm();
  const remove = useChange((id: string) => plansApi.remove(id), {
    invalidates: [keys.plans.all, keys.users.all],
    done: t("plans.deleted"),
  });
  const canEdit = can("users.write");
  const groupName = (id: string) => groups.data?.find((g) => g.id === id)?.name ?? id.slice(0, 8);
  return (
    <Stack>
      <PageHeader title={t("nav.plans")} hint={t("plans.hint")}>
        {canEdit && <Button onClick={() => setEditing("new")}>{t("plans.new")}</Button>}
      </PageHeader>
      <ListState query={plans} empty={t("plans.empty")}>
        {(list) => (
          <DataTable
            minWidth={760}
            columns={["plans.name", "limits.dataLimit", "plans.duration", "plans.renewal", "plans.groups"]}
            actions={canEdit}
          >
            {list.map((plan) => (
              <Table.Tr key={plan.id} data-testid="plan-row">
                <Table.Td>
                  {canEdit ? (
                    <Button variant="subtle" size="compact-sm" onClick={() => setEditing(plan)}>
                      {plan.name}
                    </Button>
                  ) : (
                    plan.name
                  )}
                </Table.Td>
                <Table.Td data-testid="plan-limit">
                  <PlanLimit plan={plan} />
                  {plan.ip_limit !== null && (
                    <Text size="xs" c="dimmed">
                      {t("plans.ips", { count: plan.ip_limit })}
                    </Text>
                  )}
                  {plan.device_limit !== null && (
                    <Text size="xs" c="dimmed">
                      {t("plans.devices", { count: plan.device_limit })}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td data-testid="plan-duration">
                  {plan.duration_days === null ? (
                    t("plans.neverExpires")
                  ) : (
                    <Iso>{t("plans.days", { count: plan.duration_days })}</Iso>
                  )}
                  {plan.start_on_hold && (
                    <Text size="xs" c="dimmed">
                      {plan.on_hold_timeout_days === null
                        ? t("plans.onHold")
                        : t("plans.onHoldUpTo", { count: plan.on_hold_timeout_days })}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td data-testid="plan-renewal">
                  <Text size="sm">{t(`plans.renewFrom.${plan.renew_from}`)}</Text>
                  <Text size="xs" c="dimmed">
                    {plan.reset_usage ? t("plans.resetsUsage") : t("plans.keepsUsage")}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {plan.group_ids.map((id) => (
                      <Badge key={id} variant="light" tt="none">
                        {groupName(id)}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
                {canEdit && (
                  <Table.Td>
                    <Tooltip label={t("plans.delete")}>
                      <ActionIcon
                        variant="subtle"
                        color="red"
                        aria-label={t("plans.deleteOf", { name: plan.name })}
                        onClick={() =>
                          confirm(t("plans.deleteConfirm", { name: plan.name }), () => remove.mutate(plan.id))
                        }
                      >
                        <TrashIcon />
                      </ActionIcon>
                    </Tooltip>
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </DataTable>
        )}
      </ListState>
      {editing !== undefined && (
        <PlanModal plan={editing === "new" ? undefined : editing} onClose={() => setEditing(undefined)} />
      )}
      {confirmModal}
    </Stack>
  );
}
