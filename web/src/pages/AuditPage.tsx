// The audit log (owners): every state-changing call, newest first, filtered by actor, action,
// target, outcome and time; paged on the server. Filters live in the URL, so a user's or a server's
// page links to its own entries (/audit?target=<id>), and an admin's row to theirs (?actor_id=).

import {
  Autocomplete,
  Badge,
  Button,
  Card,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  Tooltip,
  UnstyledButton,
} from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useEffect, useState } from "react";
import { useAdmins, useAudit } from "../api/admin.ts";
import { AUDIT_ACTIONS } from "../api/events.ts";
import type { AuditEntry } from "../api/types.ts";
import { useI18n } from "../i18n/i18n.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { formatDate } from "../ui/format.ts";
import { Pager } from "../ui/Scaffold.tsx";

const OUTCOMES = ["succeeded", "failed", "pending", "interrupted"] as const;
type Outcome = (typeof OUTCOMES)[number];
const OUTCOME_COLORS: Record<string, string> = {
  succeeded: "teal",
  failed: "red",
  pending: "yellow",
  interrupted: "orange",
};
const PER_PAGE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ACTION = /^[a-z_.]{1,64}$/;

type Filters = {
  actor_id: string;
  action: string;
  target: string;
  outcome: string;
  from: string;
  to: string;
};
const EMPTY: Filters = { actor_id: "", action: "", target: "", outcome: "", from: "", to: "" };
const KEYS = Object.keys(EMPTY) as (keyof Filters)[];

function readUrl(): { filters: Filters; page: number } {
  const params = new URLSearchParams(window.location.search);
  const filters = { ...EMPTY };
  for (const key of KEYS) filters[key] = params.get(key) ?? "";
  const page = Number(params.get("page") ?? "1");
  return { filters, page: Number.isInteger(page) && page > 0 ? page : 1 };
}

/** `<input type="datetime-local">` (the browser's local time) ⇄ the API's ISO instants. */
function toIso(local: string): string | undefined {
  if (local === "") return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The query the API takes: only valid filters (a half-typed one waits instead of failing). */
function toQuery(f: Filters, page: number) {
  return {
    page,
    per_page: PER_PAGE,
    ...(UUID.test(f.actor_id) ? { actor_id: f.actor_id } : {}),
    ...(ACTION.test(f.action) ? { action: f.action } : {}),
    ...(UUID.test(f.target) ? { target: f.target } : {}),
    ...((OUTCOMES as readonly string[]).includes(f.outcome) ? { outcome: f.outcome as Outcome } : {}),
    ...(toIso(f.from) ? { from: toIso(f.from) } : {}),
    ...(toIso(f.to) ? { to: toIso(f.to) } : {}),
  };
}

function EntryRow({ entry, onTarget }: { entry: AuditEntry; onTarget: (id: string) => void }) {
  const { t, language } = useI18n();
  const targets = Object.entries(entry.targets);
  return (
    <Table.Tr data-testid="audit-row" data-action={entry.action}>
      <Table.Td fz="sm" style={{ whiteSpace: "nowrap" }}>
        {formatDate(entry.at, language)}
      </Table.Td>
      <Table.Td>
        <Text size="sm" fw={500}>
          {entry.actor.name}
        </Text>
        <Text size="xs" c="dimmed">
          {entry.actor.kind}
        </Text>
      </Table.Td>
      <Table.Td>
        <Text size="sm" ff="monospace" data-testid="audit-action">
          {entry.action}
        </Text>
        {entry.fields !== null && entry.fields.length > 0 && (
          <Text size="xs" c="dimmed">
            {t("audit.fields", { fields: entry.fields.join(", ") })}
          </Text>
        )}
      </Table.Td>
      <Table.Td style={{ whiteSpace: "nowrap" }}>
        <Stack gap={2}>
          {targets.length === 0 && "—"}
          {targets.map(([key, id]) => (
            <Tooltip key={key} label={t("audit.filterTarget")}>
              <UnstyledButton onClick={() => onTarget(id)} fz="xs" ff="monospace" td="underline">
                {key}: {id.slice(0, 8)}…
              </UnstyledButton>
            </Tooltip>
          ))}
        </Stack>
      </Table.Td>
      <Table.Td>
        <Group gap={4} wrap="nowrap">
          <Badge color={OUTCOME_COLORS[entry.outcome] ?? "gray"} variant="light" data-testid="audit-outcome">
            {(OUTCOMES as readonly string[]).includes(entry.outcome)
              ? t(`audit.outcome.${entry.outcome as Outcome}`)
              : entry.outcome}
          </Badge>
          {entry.status !== null && <Text size="xs">{entry.status}</Text>}
        </Group>
      </Table.Td>
      <Table.Td>
        <Text size="xs" ff="monospace">
          {entry.method ?? ""} {entry.route ?? ""}
        </Text>
        <Text size="xs" c="dimmed">
          {entry.ip ?? ""}
        </Text>
      </Table.Td>
    </Table.Tr>
  );
}

export function AuditPage() {
  const { t } = useI18n();
  const [initial] = useState(readUrl);
  const [filters, setFilters] = useState<Filters>(initial.filters);
  const [page, setPage] = useState(initial.page);
  const [debounced] = useDebouncedValue(filters, 300);
  const admins = useAdmins();
  const set = (key: keyof Filters, value: string) => {
    setFilters((current) => ({ ...current, [key]: value }));
    setPage(1);
  };
  const query = toQuery(debounced, page);
  const log = useAudit(query);

  useEffect(() => {
    const params = new URLSearchParams();
    for (const key of KEYS) if (debounced[key] !== "") params.set(key, debounced[key]);
    if (page > 1) params.set("page", String(page));
    const search = params.toString();
    window.history.replaceState(null, "", `${window.location.pathname}${search ? `?${search}` : ""}`);
  }, [debounced, page]);

  const actorOptions = (admins.data ?? []).map((a) => ({ value: a.id, label: a.username }));
  if (filters.actor_id !== "" && !actorOptions.some((o) => o.value === filters.actor_id)) {
    actorOptions.push({ value: filters.actor_id, label: filters.actor_id });
  }
  const total = log.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PER_PAGE));
  const hasFilters = KEYS.some((key) => filters[key] !== "");
  return (
    <Stack>
      <Title order={2}>{t("nav.audit")}</Title>
      <Card withBorder>
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="sm">
          <Select
            label={t("audit.actor")}
            placeholder={t("audit.anyone")}
            data={actorOptions}
            value={filters.actor_id || null}
            onChange={(value) => set("actor_id", value ?? "")}
            clearable
            searchable
          />
          <Autocomplete
            label={t("audit.action")}
            placeholder="users.create"
            data={[...AUDIT_ACTIONS]}
            value={filters.action}
            onChange={(value) => set("action", value.trim())}
            error={
              filters.action !== "" && !ACTION.test(filters.action) ? t("audit.actionInvalid") : undefined
            }
          />
          <TextInput
            label={t("audit.target")}
            placeholder={t("audit.targetHint")}
            value={filters.target}
            onChange={(e) => set("target", e.currentTarget.value.trim().toLowerCase())}
            error={filters.target !== "" && !UUID.test(filters.target) ? t("audit.targetInvalid") : undefined}
            data-testid="audit-target"
          />
          <Select
            label={t("audit.outcome")}
            placeholder={t("audit.anyOutcome")}
            data={OUTCOMES.map((o) => ({ value: o, label: t(`audit.outcome.${o}`) }))}
            value={filters.outcome || null}
            onChange={(value) => set("outcome", value ?? "")}
            clearable
          />
          <TextInput
            type="datetime-local"
            label={t("audit.from")}
            value={filters.from}
            onChange={(e) => set("from", e.currentTarget.value)}
          />
          <TextInput
            type="datetime-local"
            label={t("audit.to")}
            value={filters.to}
            onChange={(e) => set("to", e.currentTarget.value)}
          />
        </SimpleGrid>
        {hasFilters && (
          <Group justify="flex-end" mt="sm">
            <Button
              size="xs"
              variant="subtle"
              onClick={() => {
                setFilters(EMPTY);
                setPage(1);
              }}
            >
              {t("audit.clear")}
            </Button>
          </Group>
        )}
      </Card>
      {log.error && <ErrorAlert error={log.error} />}
      <Text size="sm" c="dimmed" aria-live="polite" data-testid="audit-summary">
        {t("audit.total", { count: total })}
      </Text>
      <Table.ScrollContainer minWidth={980}>
        <Table striped aria-busy={log.isFetching} data-testid="audit-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("audit.at")}</Table.Th>
              <Table.Th>{t("audit.actor")}</Table.Th>
              <Table.Th>{t("audit.action")}</Table.Th>
              <Table.Th>{t("audit.targets")}</Table.Th>
              <Table.Th>{t("audit.outcome")}</Table.Th>
              <Table.Th>{t("audit.request")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {log.data?.items.map((entry) => (
              <EntryRow key={entry.id} entry={entry} onTarget={(id) => set("target", id)} />
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {log.data?.items.length === 0 && (
        <Text c="dimmed" ta="center" py="lg">
          {t("audit.empty")}
        </Text>
      )}
      {pages > 1 && <Pager total={pages} value={page} onChange={setPage} />}
      <Text size="xs" c="dimmed">
        {t("audit.hint")}
      </Text>
    </Stack>
  );
}
