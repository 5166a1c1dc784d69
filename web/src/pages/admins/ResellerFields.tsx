// What an admin reaches and may grant (docs/RESELLERS.md): each user permission's scope (their own
// users or all), and the quotas over the users they own: how many, how much data in all, which
// groups and which plans. An owner's scopes are always all and quotas do not apply to what the role does not do, so
// the fields are shown for the other roles only.
import {
  Button,
  Checkbox,
  Group,
  MultiSelect,
  NumberInput,
  SegmentedControl,
  SimpleGrid,
  Stack,
  Text,
  Title,
} from "@mantine/core";
import type { UseFormReturnType } from "@mantine/form";
import { useGroups, usePlans } from "../../api/groups.ts";
import type { Admin, AdminUpdate } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { Bytes, Iso } from "../../ui/Num.tsx";
import { UNITS } from "../users/userForm.tsx";

type Scopes = Admin["scopes"];
type Scopable = keyof Scopes;
export const SCOPABLE: Scopable[] = [
  "users.read",
  "users.write",
  "users.lifecycle",
  "links.read",
  "access.write",
];
const ALL: Scopes = {
  "users.read": "all",
  "users.write": "all",
  "users.lifecycle": "all",
  "links.read": "all",
  "access.write": "all",
};

export type ResellerValues = {
  scopes: Scopes;
  /** "" = no quota */
  max_users: number | string;
  /** GiB; "" = no quota */
  max_data_gib: number | string;
  /** false: any group (allowed_group_ids null) */
  limit_groups: boolean;
  allowed_group_ids: string[];
  /** false: any plan (allowed_plan_ids null) */
  limit_plans: boolean;
  allowed_plan_ids: string[];
};

export function resellerValues(admin?: Admin): ResellerValues {
  return {
    scopes: admin?.scopes ?? ALL,
    max_users: admin?.max_users ?? "",
    max_data_gib:
      admin?.max_data_bytes === null || admin?.max_data_bytes === undefined
        ? ""
        : Number((admin.max_data_bytes / UNITS.GiB).toFixed(3)),
    limit_groups: admin?.allowed_group_ids !== null && admin?.allowed_group_ids !== undefined,
    allowed_group_ids: admin?.allowed_group_ids ?? [],
    limit_plans: admin?.allowed_plan_ids !== null && admin?.allowed_plan_ids !== undefined,
    allowed_plan_ids: admin?.allowed_plan_ids ?? [],
  };
}

export function resellerBody(
  v: ResellerValues,
): Pick<AdminUpdate, "scopes" | "max_users" | "max_data_bytes" | "allowed_group_ids" | "allowed_plan_ids"> {
  return {
    scopes: v.scopes,
    max_users: v.max_users === "" ? null : Number(v.max_users),
    max_data_bytes: v.max_data_gib === "" ? null : Math.round(Number(v.max_data_gib) * UNITS.GiB),
    allowed_group_ids: v.limit_groups ? v.allowed_group_ids : null,
    allowed_plan_ids: v.limit_plans ? v.allowed_plan_ids : null,
  };
}

/** `form`: a form whose values are these plus the caller's own (see `asResellerForm`). */
export function ResellerFields({ form: f }: { form: UseFormReturnType<ResellerValues> }) {
  const t = useT();
  const groups = useGroups();
  const plans = usePlans();
  const v = f.values;
  return (
    <Stack gap="sm" data-testid="reseller-fields">
      <Group justify="space-between">
        <Title order={4}>{t("reseller.scopes")}</Title>
        <Button
          size="compact-xs"
          variant="subtle"
          onClick={() =>
            f.setFieldValue("scopes", Object.fromEntries(SCOPABLE.map((p) => [p, "own"])) as Scopes)
          }
        >
          {t("reseller.allOwn")}
        </Button>
      </Group>
      <Text size="xs" c="dimmed">
        {t("reseller.scopesHint")}
      </Text>
      {SCOPABLE.map((permission) => (
        <Group key={permission} justify="space-between" wrap="wrap" gap="xs">
          <Text size="sm" id={`scope-${permission}`}>
            {t(`reseller.scope.${permission}`)}
          </Text>
          <SegmentedControl
            size="xs"
            aria-labelledby={`scope-${permission}`}
            data-testid={`scope-${permission}`}
            data={[
              { value: "own", label: t("reseller.own") },
              { value: "all", label: t("reseller.all") },
            ]}
            value={v.scopes[permission]}
            onChange={(value) =>
              f.setFieldValue("scopes", { ...v.scopes, [permission]: value === "own" ? "own" : "all" })
            }
          />
        </Group>
      ))}
      <Title order={4}>{t("reseller.quotas")}</Title>
      <SimpleGrid cols={{ base: 1, xs: 2 }}>
        <NumberInput
          label={t("reseller.maxUsers")}
          description={t("reseller.noQuota")}
          min={0}
          allowDecimal={false}
          {...f.getInputProps("max_users")}
        />
        <NumberInput
          label={t("reseller.maxData")}
          description={t("reseller.maxDataHint")}
          min={0}
          decimalScale={3}
          {...f.getInputProps("max_data_gib")}
          error={f.errors.max_data_gib ?? f.errors.max_data_bytes}
        />
      </SimpleGrid>
      <Checkbox
        label={t("reseller.limitGroups")}
        {...f.getInputProps("limit_groups", { type: "checkbox" })}
      />
      {v.limit_groups && (
        <MultiSelect
          label={t("reseller.allowedGroups")}
          description={t("reseller.allowedGroupsHint")}
          data={(groups.data ?? []).map((g) => ({ value: g.id, label: g.name }))}
          searchable
          clearable
          data-testid="allowed-groups"
          {...f.getInputProps("allowed_group_ids")}
        />
      )}
      <Checkbox label={t("reseller.limitPlans")} {...f.getInputProps("limit_plans", { type: "checkbox" })} />
      {v.limit_plans && (
        <MultiSelect
          label={t("reseller.allowedPlans")}
          description={t("reseller.allowedPlansHint")}
          data={(plans.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
          searchable
          clearable
          data-testid="allowed-plans"
          {...f.getInputProps("allowed_plan_ids")}
        />
      )}
    </Stack>
  );
}

/** The reseller part of a larger form (the create dialog's values are these plus name, password, role). */
export function asResellerForm<T extends ResellerValues>(form: UseFormReturnType<T>) {
  return form as unknown as UseFormReturnType<ResellerValues>;
}

/** "3 / 10 users · 4.00 GiB / 100.00 GiB": what the admin owns against the quotas. */
export function QuotaSummary({ admin }: { admin: Admin }) {
  const t = useT();
  const own = SCOPABLE.some((p) => admin.scopes[p] === "own");
  return (
    <Stack gap={0} data-testid="admin-quotas">
      <Text size="sm">
        <Iso>
          {admin.max_users === null
            ? t("reseller.users", { count: admin.owned.users })
            : t("reseller.usersOf", { count: admin.owned.users, max: admin.max_users })}
        </Iso>
        {admin.max_data_bytes !== null && (
          <>
            {" · "}
            <Bytes value={admin.owned.data_limit_bytes} /> / <Bytes value={admin.max_data_bytes} />
          </>
        )}
      </Text>
      {own && (
        <Text size="xs" c="dimmed">
          {t("reseller.ownUsersOnly")}
        </Text>
      )}
    </Stack>
  );
}
