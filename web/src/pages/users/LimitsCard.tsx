// The user page's "Limits and expiry": the status (enable / disable / on hold), the data limit with a
// GB/MB unit (empty = unlimited), when usage starts over, the expiry (empty = never) and the on-hold
// duration. Saved with PUT /api/users/{id}: only the fields changed; an error lands on its field.
import {
  Button,
  Card,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { api, unwrap } from "../../api/client.ts";
import type { User } from "../../api/types.ts";
import { useI18n } from "../../i18n/i18n.tsx";
import { notifyDone, notifyError } from "../../ui/errors.tsx";
import { applyFieldErrors } from "./CreateUser.tsx";
import { ExpiryCell, UsageCell, UserStatusBadge } from "./lifecycle.tsx";

const UNITS = { GB: 2 ** 30, MB: 2 ** 20 } as const;
type Unit = keyof typeof UNITS;
const RESETS = ["no_reset", "day", "week", "month", "month_rolling", "year"] as const;
type Settable = "active" | "disabled" | "on_hold";

/** Form values named after the API's fields, so a problem's `body.<field>` lands on its input. */
type LimitsValues = {
  status: Settable;
  data_limit_bytes: number | string;
  unit: Unit;
  data_limit_reset: User["data_limit_reset"];
  /** datetime-local text, local time; "" = never */
  expire_at: string;
  /** days; "" = none */
  on_hold_duration_seconds: number | string;
};

function localInput(iso: string | null): string {
  if (iso === null) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function valuesOf(user: User): LimitsValues {
  const limit = user.data_limit_bytes;
  const unit: Unit = limit !== null && limit > 0 && limit % UNITS.GB !== 0 ? "MB" : "GB";
  return {
    status: user.status === "disabled" || user.status === "on_hold" ? user.status : "active",
    data_limit_bytes: limit === null ? "" : Number((limit / UNITS[unit]).toFixed(3)),
    unit,
    data_limit_reset: user.data_limit_reset,
    expire_at: localInput(user.expire_at),
    on_hold_duration_seconds:
      user.on_hold_duration_seconds === null ? "" : Math.round(user.on_hold_duration_seconds / 86_400),
  };
}

/** The PUT body: only what differs from the stored user. */
function changes(values: LimitsValues, initial: LimitsValues) {
  const body: Record<string, unknown> = {};
  if (values.status !== initial.status) body.status = values.status;
  if (values.data_limit_bytes !== initial.data_limit_bytes || values.unit !== initial.unit) {
    body.data_limit_bytes =
      values.data_limit_bytes === ""
        ? null
        : Math.round(Number(values.data_limit_bytes) * UNITS[values.unit]);
  }
  if (values.data_limit_reset !== initial.data_limit_reset) body.data_limit_reset = values.data_limit_reset;
  if (values.expire_at !== initial.expire_at) {
    body.expire_at = values.expire_at === "" ? null : new Date(values.expire_at).toISOString();
  }
  if (values.on_hold_duration_seconds !== initial.on_hold_duration_seconds) {
    body.on_hold_duration_seconds =
      values.on_hold_duration_seconds === ""
        ? null
        : Math.round(Number(values.on_hold_duration_seconds) * 86_400);
  }
  return body;
}

export function LimitsCard({ user, canEdit }: { user: User; canEdit: boolean }) {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const form = useForm<LimitsValues>({ initialValues: valuesOf(user) });
  useEffect(() => {
    form.setInitialValues(valuesOf(user));
    form.setValues(valuesOf(user));
    form.resetDirty();
  }, [user.updated_at]);
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) =>
      unwrap(api.PUT("/api/users/{id}", { params: { path: { id: user.id } }, body })),
    onSuccess: (saved) => {
      queryClient.setQueryData(["users", saved.id], saved);
      void queryClient.invalidateQueries({ queryKey: ["users", "page"] });
      notifyDone(t("common.saved"));
    },
    onError: (error) => {
      applyFieldErrors(form, error);
      notifyError(error);
    },
  });
  const setStatus = (status: Settable) => save.mutate({ status });
  return (
    <Card withBorder data-testid="limits-card">
      <form onSubmit={form.onSubmit((values) => save.mutate(changes(values, valuesOf(user))))}>
        <Stack>
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
              {user.status === "disabled" ? (
                <Button
                  size="xs"
                  variant="light"
                  loading={save.isPending}
                  onClick={() => setStatus("active")}
                >
                  {t("limits.enable")}
                </Button>
              ) : (
                <Button
                  size="xs"
                  variant="light"
                  color="red"
                  loading={save.isPending}
                  onClick={() => setStatus("disabled")}
                >
                  {t("limits.disable")}
                </Button>
              )}
            </Group>
          )}
          <Group align="flex-start" gap="xs" wrap="nowrap">
            <NumberInput
              label={t("limits.dataLimit")}
              description={t("limits.dataLimitHint")}
              min={0}
              decimalScale={3}
              readOnly={!canEdit}
              style={{ flex: 1 }}
              data-testid="limit-data"
              {...form.getInputProps("data_limit_bytes")}
            />
            <Select
              label={t("limits.unit")}
              data={Object.keys(UNITS)}
              allowDeselect={false}
              readOnly={!canEdit}
              w={90}
              {...form.getInputProps("unit")}
            />
          </Group>
          <Select
            label={t("limits.reset")}
            data={RESETS.map((r) => ({ value: r, label: t(`limits.reset.${r}`) }))}
            allowDeselect={false}
            readOnly={!canEdit}
            {...form.getInputProps("data_limit_reset")}
          />
          <TextInput
            type="datetime-local"
            label={t("limits.expireAt")}
            description={t("limits.expireAtHint")}
            readOnly={!canEdit}
            data-testid="limit-expire"
            {...form.getInputProps("expire_at")}
          />
          <Select
            label={t("limits.status")}
            data={(["active", "disabled", "on_hold"] as const).map((s) => ({
              value: s,
              label: t(`userStatus.${s}`),
            }))}
            allowDeselect={false}
            readOnly={!canEdit}
            data-testid="limit-status"
            {...form.getInputProps("status")}
          />
          <NumberInput
            label={t("limits.onHoldDays")}
            description={t("limits.onHoldHint")}
            min={1}
            allowDecimal={false}
            readOnly={!canEdit}
            {...form.getInputProps("on_hold_duration_seconds")}
          />
          {canEdit && (
            <Group justify="flex-end">
              <Button
                type="submit"
                loading={save.isPending}
                disabled={!form.isDirty()}
                data-testid="limits-save"
              >
                {t("common.save")}
              </Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}
