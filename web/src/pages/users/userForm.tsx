// A user's form, the same in "New user" and on the user page: name, Telegram ID, comment (and on the
// user page the user's own announcement), the data
// limit in GiB or MiB (empty = unlimited), when usage starts over, the expiry (empty = never) or on
// hold with its duration, the device and IP limits (empty = the settings' default, 0 = unlimited). Values are named after the API's fields, so a problem's `body.<field>`
// lands on its input; the page sends only what changed, the dialog what was filled in.
import { NumberInput, Select, SimpleGrid, Textarea, TextInput } from "@mantine/core";
import type { UseFormReturnType } from "@mantine/form";
import type { User, UserInput } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";

/** Binary units, named as they are (the API stores bytes; 1 GiB = 2^30). */
export const UNITS = { GiB: 2 ** 30, MiB: 2 ** 20 } as const;
export type Unit = keyof typeof UNITS;
const RESETS = ["no_reset", "day", "week", "month", "month_rolling", "year"] as const;
export type Settable = "active" | "disabled" | "on_hold";

export type UserValues = {
  name: string;
  comment: string;
  /** the user's own Announce header (user page only); "" = the subscription settings' */
  announce: string;
  telegram_id: string | number;
  /** what an admin may set; a limited or expired user shows that status until one is chosen */
  status: Settable | "limited" | "expired";
  data_limit_bytes: number | string;
  unit: Unit;
  data_limit_reset: User["data_limit_reset"];
  /** datetime-local text, local time; "" = never */
  expire_at: string;
  /** days; "" = none */
  on_hold_duration_seconds: number | string;
  /** "" = the settings' default; 0 = unlimited */
  ip_limit: number | string;
  device_limit: number | string;
};

export const NEW_USER: UserValues = {
  name: "",
  comment: "",
  announce: "",
  telegram_id: "",
  status: "active",
  data_limit_bytes: "",
  unit: "GiB",
  data_limit_reset: "no_reset",
  expire_at: "",
  on_hold_duration_seconds: "",
  ip_limit: "",
  device_limit: "",
};

function localInput(iso: string | null): string {
  if (iso === null) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function valuesOf(user: User): UserValues {
  const limit = user.data_limit_bytes;
  const unit: Unit = limit !== null && limit > 0 && limit % UNITS.GiB !== 0 ? "MiB" : "GiB";
  return {
    name: user.name,
    comment: user.comment ?? "",
    announce: user.announce ?? "",
    telegram_id: user.telegram_id ?? "",
    status: user.status,
    data_limit_bytes: limit === null ? "" : Number((limit / UNITS[unit]).toFixed(3)),
    unit,
    data_limit_reset: user.data_limit_reset,
    expire_at: localInput(user.expire_at),
    on_hold_duration_seconds:
      user.on_hold_duration_seconds === null ? "" : Math.round(user.on_hold_duration_seconds / 86_400),
    ip_limit: user.ip_limit ?? "",
    device_limit: user.device_limit ?? "",
  };
}

type Field = Exclude<keyof UserValues, "unit">;
const CONVERT: { [K in Field]: (v: UserValues) => unknown } = {
  name: (v) => v.name,
  comment: (v) => (v.comment.trim() === "" ? null : v.comment),
  announce: (v) => (v.announce.trim() === "" ? null : v.announce),
  telegram_id: (v) => (v.telegram_id === "" ? null : Number(v.telegram_id)),
  status: (v) => v.status,
  data_limit_bytes: (v) =>
    v.data_limit_bytes === "" ? null : Math.round(Number(v.data_limit_bytes) * UNITS[v.unit]),
  data_limit_reset: (v) => v.data_limit_reset,
  expire_at: (v) => (v.expire_at === "" ? null : new Date(v.expire_at).toISOString()),
  on_hold_duration_seconds: (v) =>
    v.on_hold_duration_seconds === "" ? null : Math.round(Number(v.on_hold_duration_seconds) * 86_400),
  ip_limit: (v) => (v.ip_limit === "" ? null : Number(v.ip_limit)),
  device_limit: (v) => (v.device_limit === "" ? null : Number(v.device_limit)),
};

/**
 * The body to send: against `initial`, only the fields that changed (the audit log names them);
 * without it, every field that differs from a new user's defaults.
 */
export function bodyOf(values: UserValues, initial: UserValues = NEW_USER): UserInput {
  const body: Record<string, unknown> = {};
  for (const field of Object.keys(CONVERT) as Field[]) {
    const value = CONVERT[field](values);
    if (value !== CONVERT[field](initial) || (field === "name" && initial === NEW_USER)) body[field] = value;
  }
  return body as UserInput;
}

type FormProps = { form: UseFormReturnType<UserValues>; readOnly?: boolean };

/** Name, Telegram ID, comment. */
export function UserFields({
  form,
  readOnly = false,
  autoFocus = false,
}: FormProps & { autoFocus?: boolean }) {
  const t = useT();
  return (
    <>
      <TextInput
        label={t("users.name")}
        required
        readOnly={readOnly}
        data-autofocus={autoFocus || undefined}
        {...form.getInputProps("name")}
      />
      <NumberInput
        label={t("users.telegramId")}
        min={1}
        allowDecimal={false}
        readOnly={readOnly}
        {...form.getInputProps("telegram_id")}
      />
      <Textarea
        label={t("users.comment")}
        autosize
        minRows={2}
        readOnly={readOnly}
        {...form.getInputProps("comment")}
      />
    </>
  );
}

/** The user's own announcement, instead of the subscription settings' one (the user page only). */
export function AnnounceField({ form, readOnly = false }: FormProps) {
  const t = useT();
  return (
    <Textarea
      label={t("users.announce")}
      description={t("users.announceHint")}
      autosize
      minRows={1}
      maxLength={500}
      readOnly={readOnly}
      data-testid="user-announce"
      {...form.getInputProps("announce")}
    />
  );
}

/** The data limit with its unit, the reset period, the expiry, the status and the on-hold days. */
export function LimitFields({ form, readOnly = false }: FormProps) {
  const t = useT();
  const derived = form.values.status === "limited" || form.values.status === "expired";
  const statuses = (["active", "disabled", "on_hold"] as const).map((s) => ({
    value: s,
    label: t(`userStatus.${s}`),
  }));
  return (
    <>
      <SimpleGrid cols={{ base: 1, xs: 2 }}>
        <NumberInput
          label={t("limits.dataLimit")}
          description={t("limits.dataLimitHint")}
          min={0}
          decimalScale={3}
          readOnly={readOnly}
          data-testid="limit-data"
          {...form.getInputProps("data_limit_bytes")}
        />
        <Select
          label={t("limits.unit")}
          data={Object.keys(UNITS)}
          allowDeselect={false}
          readOnly={readOnly}
          data-testid="limit-unit"
          {...form.getInputProps("unit")}
        />
      </SimpleGrid>
      <Select
        label={t("limits.reset")}
        data={RESETS.map((r) => ({ value: r, label: t(`limits.reset.${r}`) }))}
        allowDeselect={false}
        readOnly={readOnly}
        data-testid="limit-reset"
        {...form.getInputProps("data_limit_reset")}
      />
      <TextInput
        type="datetime-local"
        label={t("limits.expireAt")}
        description={t("limits.expireAtHint")}
        readOnly={readOnly}
        data-testid="limit-expire"
        {...form.getInputProps("expire_at")}
      />
      <SimpleGrid cols={{ base: 1, xs: 2 }}>
        <Select
          label={t("limits.status")}
          description={derived ? t("limits.statusDerived") : undefined}
          // A limited or expired user is shown as such (it follows from the numbers), never as "Active".
          data={
            derived
              ? [
                  { value: form.values.status, label: t(`userStatus.${form.values.status}`), disabled: true },
                  ...statuses,
                ]
              : statuses
          }
          allowDeselect={false}
          readOnly={readOnly}
          data-testid="limit-status"
          {...form.getInputProps("status")}
        />
        <NumberInput
          label={t("limits.onHoldDays")}
          description={t("limits.onHoldHint")}
          min={1}
          allowDecimal={false}
          readOnly={readOnly}
          data-testid="limit-onhold"
          {...form.getInputProps("on_hold_duration_seconds")}
        />
      </SimpleGrid>
      <SimpleGrid cols={{ base: 1, xs: 2 }}>
        <NumberInput
          label={t("limits.deviceLimit")}
          description={t("limits.deviceLimitHint")}
          min={0}
          max={1000}
          allowDecimal={false}
          readOnly={readOnly}
          data-testid="limit-devices"
          {...form.getInputProps("device_limit")}
        />
        <NumberInput
          label={t("limits.ipLimit")}
          description={t("limits.ipLimitHint")}
          min={0}
          max={1000}
          allowDecimal={false}
          readOnly={readOnly}
          data-testid="limit-ips"
          {...form.getInputProps("ip_limit")}
        />
      </SimpleGrid>
    </>
  );
}
