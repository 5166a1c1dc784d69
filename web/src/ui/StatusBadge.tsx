// The colours of state, the same on every page: green is fine, yellow waits, red needs a person.
import { Badge, type BadgeProps, Tooltip } from "@mantine/core";
import type { Certificate, Role, Server, User } from "../api/types.ts";
import type { MessageKey } from "../i18n/en.ts";
import { useT } from "../i18n/i18n.tsx";

export function SyncBadge({ state, error }: { state: "pending" | "synced" | "error"; error: string | null }) {
  const t = useT();
  const badge = (
    <Badge
      color={state === "synced" ? "teal" : state === "pending" ? "yellow" : "red"}
      variant="light"
      data-testid="sync-state"
    >
      {t(`sync.${state}`)}
    </Badge>
  );
  return error ? (
    <Tooltip label={error} multiline maw={320}>
      {badge}
    </Tooltip>
  ) : (
    badge
  );
}

/**
 * Every state's colour, one table: green is fine, yellow waits, blue is on its way, red needs a
 * person (a server offline is red: it is a problem, never an idle grey). Light badges keep their
 * colour in the dark scheme too (theme.ts).
 */
export const STATE_COLORS = {
  server: { online: "teal", offline: "red", error: "red", unknown: "yellow" },
  certificate: { valid: "teal", expiring: "yellow", expired: "red", pending: "blue", failed: "red" },
  user: { active: "teal", disabled: "gray", limited: "orange", expired: "red", on_hold: "blue" },
  role: { owner: "grape", operator: "blue", support: "teal", viewer: "gray" },
} as const satisfies {
  server: Record<Server["status"], string>;
  certificate: Record<Certificate["status"], string>;
  user: Record<User["status"], string>;
  role: Record<Role, string>;
};

/** A state as a coloured word: `colors` maps each state to its colour, `label` says it. */
export function StateBadge<S extends string>({
  state,
  colors,
  label,
  testId,
  ...props
}: { state: S; colors: Readonly<Record<S, string>>; label: MessageKey; testId: string } & Omit<
  BadgeProps,
  "color" | "children"
>) {
  return (
    <Badge variant="light" color={colors[state]} data-testid={testId} data-status={state} {...props}>
      {useT()(label)}
    </Badge>
  );
}

export function ServerStatusBadge({ status }: { status: Server["status"] }) {
  const label = `server.status.${status}` as const;
  return (
    <StateBadge state={status} colors={STATE_COLORS.server} label={label} testId="server-status" size="lg" />
  );
}

export function CertificateStatusBadge({ status }: { status: Certificate["status"] }) {
  const label = `certificate.status.${status}` as const;
  return (
    <StateBadge state={status} colors={STATE_COLORS.certificate} label={label} testId="certificate-status" />
  );
}
