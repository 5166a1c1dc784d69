// The users table's filters (status, expiring before, usage over a percentage, for owners the admin
// who owns the user) and its sort, kept in
// the URL like the page and the search (a filtered view can be bookmarked and shared).
import { Button, Group, MultiSelect, NumberInput, Select, TextInput } from "@mantine/core";
import { useAdmins } from "../../api/admin.ts";
import { useCan } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";
import { USER_STATUSES, type UserStatus } from "./lifecycle.tsx";

export type SortKey = "created_at" | "used_bytes" | "expire_at";
export type ListFilters = {
  status: UserStatus[];
  /** yyyy-mm-dd (local midnight of that day), "" = none */
  expiresBefore: string;
  usedOverPercent: number | null;
  /** an admin's id, "none" (owned by nobody), null = any owner */
  owner: string | null;
  sort: SortKey;
  order: "asc" | "desc";
};

export const NO_FILTERS: ListFilters = {
  status: [],
  expiresBefore: "",
  usedOverPercent: null,
  owner: null,
  sort: "created_at",
  order: "asc",
};

export function readFilters(params: URLSearchParams): ListFilters {
  const status = (params.get("status") ?? "")
    .split(",")
    .filter((s): s is UserStatus => (USER_STATUSES as string[]).includes(s));
  const percent = Number(params.get("used_over_percent") ?? "");
  const sort = params.get("sort");
  const expires = params.get("expires_before") ?? "";
  const owner = params.get("owner") ?? "";
  return {
    status,
    expiresBefore: /^\d{4}-\d\d-\d\d$/.test(expires) ? expires : "",
    usedOverPercent:
      params.get("used_over_percent") !== null && Number.isInteger(percent) && percent >= 0 && percent <= 1000
        ? percent
        : null,
    owner: owner === "none" || /^[0-9a-f-]{36}$/.test(owner) ? owner : null,
    sort: sort === "used_bytes" || sort === "expire_at" ? sort : "created_at",
    order: params.get("order") === "desc" ? "desc" : "asc",
  };
}

export function writeFilters(params: URLSearchParams, filters: ListFilters): void {
  if (filters.status.length > 0) params.set("status", filters.status.join(","));
  if (filters.expiresBefore) params.set("expires_before", filters.expiresBefore);
  if (filters.usedOverPercent !== null) params.set("used_over_percent", String(filters.usedOverPercent));
  if (filters.owner !== null) params.set("owner", filters.owner);
  if (filters.sort !== "created_at") params.set("sort", filters.sort);
  if (filters.order !== "asc") params.set("order", filters.order);
}

export function isFiltered(filters: ListFilters): boolean {
  return (
    filters.status.length > 0 ||
    filters.expiresBefore !== "" ||
    filters.usedOverPercent !== null ||
    filters.owner !== null
  );
}

/** The API's query parameters for these filters. */
export function filterQuery(filters: ListFilters) {
  return {
    ...(filters.status.length > 0 ? { status: filters.status.join(",") } : {}),
    ...(filters.expiresBefore
      ? { expires_before: new Date(`${filters.expiresBefore}T00:00:00`).toISOString() }
      : {}),
    ...(filters.usedOverPercent !== null ? { used_over_percent: filters.usedOverPercent } : {}),
    ...(filters.owner !== null ? { owner_admin_id: filters.owner } : {}),
    ...(filters.sort !== "created_at" ? { sort: filters.sort } : {}),
    ...(filters.order !== "asc" ? { order: filters.order } : {}),
  };
}

export function UserFilters({
  filters,
  onChange,
}: {
  filters: ListFilters;
  onChange: (filters: ListFilters) => void;
}) {
  const t = useT();
  const isOwner = useCan()("admins.manage");
  const admins = useAdmins(isOwner);
  return (
    <Group gap="sm" align="flex-end" wrap="wrap" data-testid="user-filters">
      <MultiSelect
        label={t("filters.status")}
        placeholder={filters.status.length === 0 ? t("filters.anyStatus") : undefined}
        data={USER_STATUSES.map((s) => ({ value: s, label: t(`userStatus.${s}`) }))}
        value={filters.status}
        onChange={(value) => onChange({ ...filters, status: value as UserStatus[] })}
        clearable
        w={260}
        data-testid="filter-status"
      />
      <TextInput
        type="date"
        label={t("filters.expiresBefore")}
        value={filters.expiresBefore}
        onChange={(event) => onChange({ ...filters, expiresBefore: event.currentTarget.value })}
        w={170}
        data-testid="filter-expires-before"
      />
      <NumberInput
        label={t("filters.usedOverPercent")}
        value={filters.usedOverPercent ?? ""}
        onChange={(value) =>
          onChange({ ...filters, usedOverPercent: typeof value === "number" ? Math.floor(value) : null })
        }
        min={0}
        max={1000}
        allowDecimal={false}
        suffix=" %"
        w={150}
        data-testid="filter-used-over"
      />
      {isOwner && (
        <Select
          label={t("owner.label")}
          placeholder={t("owner.any")}
          data={[
            { value: "none", label: t("owner.nobody") },
            ...(admins.data ?? []).map((a) => ({ value: a.id, label: a.username })),
          ]}
          value={filters.owner}
          onChange={(value) => onChange({ ...filters, owner: value })}
          clearable
          searchable
          w={200}
          data-testid="filter-owner"
        />
      )}
      {isFiltered(filters) && (
        <Button
          variant="subtle"
          onClick={() => onChange({ ...NO_FILTERS, sort: filters.sort, order: filters.order })}
        >
          {t("filters.clear")}
        </Button>
      )}
    </Group>
  );
}
