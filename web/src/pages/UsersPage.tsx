// Users: the page operators live on. Server-side pagination (the next page is fetched before it is
// asked for), search as you type (debounced, earlier requests cancelled), bulk grant and delete.

import { Checkbox, Group, Kbd, Select, Stack, Table, Text, TextInput, UnstyledButton } from "@mantine/core";
import { useDebouncedValue, useHotkeys, useMediaQuery } from "@mantine/hooks";
import { useQueryClient } from "@tanstack/react-query";
import { memo, useCallback, useEffect, useRef, useState } from "react";
import { useAdmins } from "../api/admin.ts";
import type { User } from "../api/types.ts";
import { usersPageQuery, useUserSearch, useUsersPage } from "../api/users.ts";
import { useCan } from "../auth/me.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { SearchIcon } from "../ui/icons.tsx";
import { PageHeader, Pager } from "../ui/Scaffold.tsx";
import { BulkActions } from "./users/BulkActions.tsx";
import { CreateUserButton } from "./users/CreateUser.tsx";
import { ExpiryCell, UsageCell, UserStatusBadge } from "./users/lifecycle.tsx";
import {
  filterQuery,
  isFiltered,
  type ListFilters,
  readFilters,
  type SortKey,
  UserFilters,
  writeFilters,
} from "./users/UserFilters.tsx";

const PAGE_SIZES = ["25", "50", "100", "200"];
const SEARCH_DEBOUNCE_MS = 100;
const USERS_SHOWN_MARK = "portcullis:users-shown";

function pageQuery(page: number, perPage: number, filters: ListFilters) {
  return { page, per_page: perPage, ...filterQuery(filters) };
}

function readUrlState(): { q: string; page: number; perPage: number; filters: ListFilters } {
  const params = new URLSearchParams(window.location.search);
  const page = Number(params.get("page") ?? "1");
  const perPage = params.get("per_page") ?? "50";
  return {
    q: params.get("q") ?? "",
    page: Number.isInteger(page) && page > 0 ? page : 1,
    perPage: PAGE_SIZES.includes(perPage) ? Number(perPage) : 50,
    filters: readFilters(params),
  };
}

/** The order a column starts in when first clicked: most used first, soonest expiring first. */
const FIRST_ORDER: Record<SortKey, "asc" | "desc"> = {
  created_at: "asc",
  used_bytes: "desc",
  expire_at: "asc",
};

function SortHeader({
  label,
  column,
  filters,
  onSort,
  visibleFrom,
}: {
  label: string;
  column: SortKey;
  filters: ListFilters;
  onSort: (filters: ListFilters) => void;
  /** Columns a phone leaves out, so the ones that matter (status, usage, expiry) stay in view. */
  visibleFrom?: "sm";
}) {
  const { t } = useI18n();
  const isSorted = filters.sort === column;
  return (
    <Table.Th
      visibleFrom={visibleFrom}
      aria-sort={isSorted ? (filters.order === "asc" ? "ascending" : "descending") : "none"}
    >
      <UnstyledButton
        fw={600}
        fz="sm"
        aria-label={t("users.sortBy", { column: label })}
        data-testid={`sort-${column}`}
        onClick={() =>
          onSort({
            ...filters,
            sort: column,
            order: isSorted ? (filters.order === "asc" ? "desc" : "asc") : FIRST_ORDER[column],
          })
        }
      >
        {label} {isSorted ? (filters.order === "asc" ? "↑" : "↓") : ""}
      </UnstyledButton>
    </Table.Th>
  );
}

/** A row re-renders only when its user or its selection changes (typing re-renders the page). */
const UserRow = memo(function UserRow({
  user,
  isSelected,
  onToggle,
  canSelect,
  owner,
}: {
  user: User;
  isSelected: boolean;
  onToggle: (user: User) => void;
  canSelect: boolean;
  /** the owning admin's name ("" for nobody), shown to owners; undefined: no owner column */
  owner: string | undefined;
}) {
  const { t, language } = useI18n();
  return (
    <Table.Tr data-testid="user-row">
      {canSelect && (
        <Table.Td>
          <Checkbox
            aria-label={t("users.select", { name: user.name })}
            checked={isSelected}
            onChange={() => onToggle(user)}
          />
        </Table.Td>
      )}
      <Table.Td>
        <Link to={`/users/${user.id}`}>{user.name}</Link>
      </Table.Td>
      <Table.Td>
        <UserStatusBadge status={user.status} />
      </Table.Td>
      <Table.Td>
        <UsageCell user={user} />
      </Table.Td>
      <Table.Td>
        <ExpiryCell expireAt={user.expire_at} />
      </Table.Td>
      {owner !== undefined && (
        <Table.Td visibleFrom="sm" data-testid="user-owner">
          {owner === "" ? "—" : owner}
        </Table.Td>
      )}
      <Table.Td visibleFrom="sm">{user.telegram_id ?? "—"}</Table.Td>
      <Table.Td visibleFrom="sm">
        <Text size="sm" lineClamp={1}>
          {user.comment ?? ""}
        </Text>
      </Table.Td>
      <Table.Td visibleFrom="sm">{formatDate(user.created_at, language)}</Table.Td>
    </Table.Tr>
  );
});

export function UsersPage() {
  const { t } = useI18n();
  const initial = useRef(readUrlState()).current;
  const [search, setSearch] = useState(initial.q);
  const [debounced] = useDebouncedValue(search.trim(), SEARCH_DEBOUNCE_MS);
  const [page, setPage] = useState(initial.page);
  const [perPage, setPerPage] = useState(initial.perPage);
  const [filters, setFiltersState] = useState(initial.filters);
  const setFilters = (next: ListFilters) => {
    setFiltersState(next);
    setPage(1);
  };
  const [selected, setSelected] = useState<Map<string, User>>(new Map());
  const searchRef = useRef<HTMLInputElement>(null);
  const queryClient = useQueryClient();
  const can = useCan();
  // Selecting is for bulk work: only for a role that may grant, delete or change users.
  const canSelect = can("users.write") || can("access.write") || can("users.lifecycle");
  useHotkeys([["/", () => searchRef.current?.focus()]]);
  const isPhone = useMediaQuery("(max-width: 48em)") ?? false;
  // Owners see every user, and who owns each (resellers see only their own: no column).
  const isOwner = can("admins.manage");
  const admins = useAdmins(isOwner);
  const ownerName = (user: User) =>
    isOwner
      ? user.owner_admin_id === null
        ? ""
        : (admins.data?.find((a) => a.id === user.owner_admin_id)?.username ??
          user.owner_admin_id.slice(0, 8))
      : undefined;

  const isSearching = debounced.length > 0;
  const list = useUsersPage(pageQuery(page, perPage, filters), !isSearching);
  const found = useUserSearch(debounced);
  const total = list.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / perPage));

  // The next page is usually the next click: have it ready.
  useEffect(() => {
    if (!isSearching && page < pages)
      void queryClient.prefetchQuery(usersPageQuery(pageQuery(page + 1, perPage, filters)));
  }, [isSearching, page, pages, perPage, filters, queryClient]);

  // User timing for the speed benchmark (bench/dashboard.ts): when the first rows were on screen.
  useEffect(() => {
    if (list.data !== undefined && performance.getEntriesByName(USERS_SHOWN_MARK).length === 0) {
      performance.mark(USERS_SHOWN_MARK);
    }
  }, [list.data]);

  useEffect(() => {
    const params = new URLSearchParams();
    if (debounced) params.set("q", debounced);
    if (page > 1) params.set("page", String(page));
    if (perPage !== 50) params.set("per_page", String(perPage));
    writeFilters(params, filters);
    const query = params.toString();
    window.history.replaceState(null, "", `${window.location.pathname}${query ? `?${query}` : ""}`);
  }, [debounced, page, perPage, filters]);

  const rows: User[] = isSearching ? (found.data ?? []) : (list.data?.items ?? []);
  const active = isSearching ? found : list;
  const allOnPageSelected = rows.length > 0 && rows.every((u) => selected.has(u.id));
  const toggle = useCallback(
    (user: User) =>
      setSelected((current) => {
        const next = new Map(current);
        if (next.has(user.id)) next.delete(user.id);
        else next.set(user.id, user);
        return next;
      }),
    [],
  );
  const toggleAll = () =>
    setSelected((current) => {
      const next = new Map(current);
      for (const user of rows) {
        if (allOnPageSelected) next.delete(user.id);
        else next.set(user.id, user);
      }
      return next;
    });

  return (
    <Stack>
      <PageHeader title={t("users.title")}>{can("users.write") && <CreateUserButton />}</PageHeader>
      <TextInput
        ref={searchRef}
        type="search"
        leftSection={<SearchIcon />}
        rightSection={<Kbd size="xs">/</Kbd>}
        placeholder={t("users.searchPlaceholder")}
        aria-label={t("users.search")}
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        data-testid="user-search"
      />
      {canSelect && (
        <BulkActions
          selected={[...selected.values()]}
          onDone={() => setSelected(new Map())}
          canGrant={can("access.write")}
          canDelete={can("users.write")}
          canChange={can("users.lifecycle")}
        />
      )}
      {!isSearching && <UserFilters filters={filters} onChange={setFilters} />}
      {active.error && <ErrorAlert error={active.error} />}
      <Text size="sm" c="dimmed" aria-live="polite" data-testid="users-summary">
        {isSearching
          ? found.isFetching && found.data === undefined
            ? t("common.loading")
            : t("users.found", { count: rows.length })
          : isFiltered(filters)
            ? t("filters.matching", { count: total })
            : t("users.total", { count: total })}
      </Text>
      <Table.ScrollContainer minWidth={isPhone ? 420 : 900}>
        <Table
          striped
          highlightOnHover
          aria-busy={active.isFetching}
          data-testid="users-table"
          // What the rows show, for tests and the speed benchmark (bench/dashboard.ts).
          data-page={!isSearching && list.data && !list.isPlaceholderData ? list.data.page : undefined}
          data-results-for={isSearching && found.data && !found.isPlaceholderData ? debounced : undefined}
        >
          <Table.Thead>
            <Table.Tr>
              {canSelect && (
                <Table.Th w={40}>
                  <Checkbox
                    aria-label={t("users.selectAll")}
                    checked={allOnPageSelected}
                    indeterminate={!allOnPageSelected && rows.some((u) => selected.has(u.id))}
                    onChange={toggleAll}
                  />
                </Table.Th>
              )}
              <Table.Th>{t("users.name")}</Table.Th>
              <Table.Th>{t("limits.status")}</Table.Th>
              {isSearching ? (
                <>
                  <Table.Th>{t("limits.usage")}</Table.Th>
                  <Table.Th>{t("limits.expiry")}</Table.Th>
                </>
              ) : (
                <>
                  <SortHeader
                    label={t("limits.usage")}
                    column="used_bytes"
                    filters={filters}
                    onSort={setFilters}
                  />
                  <SortHeader
                    label={t("limits.expiry")}
                    column="expire_at"
                    filters={filters}
                    onSort={setFilters}
                  />
                </>
              )}
              {isOwner && <Table.Th visibleFrom="sm">{t("owner.label")}</Table.Th>}
              <Table.Th visibleFrom="sm">{t("users.telegramId")}</Table.Th>
              <Table.Th visibleFrom="sm">{t("users.comment")}</Table.Th>
              {isSearching ? (
                <Table.Th visibleFrom="sm">{t("common.created")}</Table.Th>
              ) : (
                <SortHeader
                  label={t("common.created")}
                  column="created_at"
                  filters={filters}
                  onSort={setFilters}
                  visibleFrom="sm"
                />
              )}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((user) => (
              <UserRow
                key={user.id}
                user={user}
                isSelected={selected.has(user.id)}
                onToggle={toggle}
                canSelect={canSelect}
                owner={ownerName(user)}
              />
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {!active.isLoading && rows.length === 0 && !active.error && (
        <Text c="dimmed" ta="center" py="lg">
          {isSearching
            ? t("users.noMatch", { q: debounced })
            : isFiltered(filters)
              ? t("filters.noMatch")
              : t("users.empty")}
        </Text>
      )}
      {!isSearching && (
        <Group justify="space-between">
          <Pager total={pages} value={page} onChange={setPage} data-testid="users-pagination" />
          <Select
            aria-label={t("users.perPage")}
            data={PAGE_SIZES}
            value={String(perPage)}
            allowDeselect={false}
            onChange={(value) => {
              setPerPage(Number(value ?? 50));
              setPage(1);
            }}
            w={90}
          />
        </Group>
      )}
    </Stack>
  );
}
