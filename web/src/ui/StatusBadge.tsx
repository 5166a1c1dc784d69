// The colours of state, the same on every page: green is fine, yellow waits, red needs a person.
import { Badge, type BadgeProps, Tooltip } from "@mantine/core";
import type { Certificate, Server } from "../api/types.ts";
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

/** A state as a coloured word: `colors` maps each state to its colour, `label` says it. */
export function StateBadge<S extends string>({
  state,
  colors,
  label,
  testId,
  ...props
}: { state: S; colors: Record<S, string>; label: string; testId: string } & Omit<
  BadgeProps,
  "color" | "children"
>) {
  return (
    <Badge variant="light" color={colors[state]} data-testid={testId} data-status={state} {...props}>
      {label}
    </Badge>
  );
}

// Offline and error both need a person: red, never a grey that reads as "idle".
const SERVER_COLORS: Record<Server["status"], string> = {
  online: "teal",
  offline: "red",
  error: "red",
  unknown: "yellow",
};

export function ServerStatusBadge({ status }: { status: Server["status"] }) {
  const t = useT();
  const label = t(`server.status.${status}`);
  return <StateBadge state={status} colors={SERVER_COLORS} label={label} testId="server-status" size="lg" />;
}

const CERT_COLORS: Record<Certificate["status"], string> = {
  valid: "teal",
  expiring: "yellow",
  expired: "red",
  pending: "blue",
  failed: "red",
};

export function CertificateStatusBadge({ status }: { status: Certificate["status"] }) {
  const t = useT();
  const label = t(`certificate.status.${status}`);
  return <StateBadge state={status} colors={CERT_COLORS} label={label} testId="certificate-status" />;
}
