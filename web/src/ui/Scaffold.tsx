// The pieces every list page repeats, once: a title with its action, a query's error, loading and
// empty states, a table with its header row, the pager, a form's cancel and save.
import { Button, Group, Pagination, Skeleton, Table, Text, Title, VisuallyHidden } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import type { ReactNode } from "react";
import type { MessageKey } from "../i18n/en.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { Link } from "../router.tsx";
import { ErrorAlert } from "./errors.tsx";
import { BackArrow } from "./icons.tsx";

/** A page's title with its action; `hint` is a line under it. */
export function PageHeader({
  title,
  hint,
  children,
}: {
  title: string;
  hint?: string;
  children?: ReactNode;
}) {
  return (
    <>
      <Group justify="space-between">
        <Title order={2}>{title}</Title>
        {children}
      </Group>
      {hint !== undefined && (
        <Text size="sm" c="dimmed">
          {hint}
        </Text>
      )}
    </>
  );
}

/** A card's heading with what acts on it (refresh, add), or `onRefresh` for the usual refresh button. */
export function SectionHeader({
  title,
  onRefresh,
  isRefreshing = false,
  children,
}: {
  title: string;
  onRefresh?: () => void;
  isRefreshing?: boolean;
  children?: ReactNode;
}) {
  const t = useT();
  return (
    <Group justify="space-between">
      <Title order={3}>{title}</Title>
      {onRefresh !== undefined && (
        <Button size="xs" variant="subtle" loading={isRefreshing} onClick={onRefresh}>
          {t("common.refresh")}
        </Button>
      )}
      {children}
    </Group>
  );
}

/**
 * A list query's states: its error, a skeleton while loading, `empty` when the list is empty (a
 * text, or a whole element such as the templates' starter offer), else `children(list)`.
 */
export function ListState<T>({
  query,
  empty,
  skeleton = 120,
  children,
}: {
  query: Pick<UseQueryResult<T[]>, "data" | "error" | "isLoading">;
  empty: ReactNode;
  skeleton?: number;
  children: (items: T[]) => ReactNode;
}) {
  return (
    <>
      {query.error ? <ErrorAlert error={query.error} /> : null}
      {query.isLoading && <Skeleton h={skeleton} />}
      {query.data?.length === 0 &&
        (typeof empty === "string" ? (
          <Text c="dimmed" ta="center" py="lg" data-testid="empty-state">
            {empty}
          </Text>
        ) : (
          empty
        ))}
      {query.data !== undefined && query.data.length > 0 && children(query.data)}
    </>
  );
}

/** A table that scrolls sideways on a phone; `actions` adds a last, visually hidden "Actions" column. */
export function DataTable({
  minWidth,
  columns,
  actions = false,
  scrollAreaProps,
  children,
  ...props
}: {
  minWidth: number;
  /** The header row's message keys. */
  columns: MessageKey[];
  actions?: boolean;
  scrollAreaProps?: React.ComponentProps<typeof Table.ScrollContainer>["scrollAreaProps"];
  children: ReactNode;
} & Omit<React.ComponentProps<typeof Table>, "children">) {
  const t = useT();
  return (
    <Table.ScrollContainer minWidth={minWidth} scrollAreaProps={scrollAreaProps}>
      <Table {...props}>
        <Table.Thead>
          <Table.Tr>
            {columns.map((column) => (
              <Table.Th key={column}>{t(column)}</Table.Th>
            ))}
            {actions && (
              <Table.Th>
                <VisuallyHidden>{t("admins.actions")}</VisuallyHidden>
              </Table.Th>
            )}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>{children}</Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** Pages of a server-side list, with the control names read out in the operator's language. */
export function Pager({
  total,
  value,
  onChange,
  ...rest
}: {
  total: number;
  value: number;
  onChange: (page: number) => void;
  size?: "sm" | "md";
  "data-testid"?: string;
}) {
  const t = useT();
  return (
    <Pagination
      total={total}
      value={value}
      onChange={onChange}
      siblings={1}
      boundaries={1}
      getControlProps={(control) => ({
        "aria-label":
          control === "next"
            ? t("users.nextPage")
            : control === "previous"
              ? t("users.previousPage")
              : control,
      })}
      getItemProps={(item) => ({ "aria-label": t("users.pageN", { n: item }) })}
      {...rest}
    />
  );
}

/** A dialog's foot: cancel, and the submit button (Save unless told). */
export function FormButtons({
  onCancel,
  isSaving,
  label,
  disabled,
  testId,
}: {
  onCancel?: () => void;
  isSaving: boolean;
  label?: string;
  disabled?: boolean;
  testId?: string;
}) {
  const t = useT();
  return (
    <Group justify="flex-end">
      {onCancel && (
        <Button variant="default" onClick={onCancel}>
          {t("common.cancel")}
        </Button>
      )}
      <Button type="submit" loading={isSaving} disabled={disabled} data-testid={testId}>
        {label ?? t("common.save")}
      </Button>
    </Group>
  );
}

/**
 * "← Users": the arrow points back in the reading direction (→ in Persian), drawn as an icon so
 * no bidi algorithm can turn it.
 */
export function BackLink({ to, label }: { to: string; label: string }) {
  const { dir } = useI18n();
  return (
    <Link to={to} size="sm" data-testid="back-link">
      <Group gap={4} component="span" display="inline-flex">
        <BackArrow flip={dir === "rtl"} />
        {label}
      </Group>
    </Link>
  );
}

/** A detail page's head: the way back, the title with its state, and what acts on it. */
export function DetailHeader({
  back,
  title,
  badge,
  children,
}: {
  back: { to: string; label: string };
  title: string;
  badge?: ReactNode;
  children?: ReactNode;
}) {
  return (
    <>
      <BackLink to={back.to} label={back.label} />
      <Group justify="space-between">
        <Group gap="sm">
          <Title order={2}>{title}</Title>
          {badge}
        </Group>
        <Group gap="xs">{children}</Group>
      </Group>
    </>
  );
}
