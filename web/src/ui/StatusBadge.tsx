// The colours of state, the same on every page: green is fine, yellow waits, red needs a person.
import { Badge, Tooltip } from "@mantine/core";
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

const SERVER_COLORS: Record<Server["status"], string> = {
  online: "teal",
  offline: "gray",
  error: "red",
  unknown: "yellow",
};

export function ServerStatusBadge({ status }: { status: Server["status"] }) {
  const t = useT();
  return (
    <Badge color={SERVER_COLORS[status]} variant="dot" size="lg" data-testid="server-status">
      {t(`server.status.${status}`)}
    </Badge>
  );
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
  return (
    <Badge color={CERT_COLORS[status]} variant="light" data-testid="certificate-status">
      {t(`certificate.status.${status}`)}
    </Badge>
  );
}
