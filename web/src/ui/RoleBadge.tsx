// An admin's role, the same colour everywhere (navigation, admins, API keys).
import type { Role } from "../api/types.ts";
import { useT } from "../i18n/i18n.tsx";
import { StateBadge } from "./StatusBadge.tsx";

const ROLE_COLORS: Record<Role, string> = {
  owner: "grape",
  operator: "blue",
  support: "teal",
  viewer: "gray",
};

export function RoleBadge({ role }: { role: Role }) {
  const t = useT();
  return (
    <StateBadge state={role} colors={ROLE_COLORS} label={t(`role.${role}`)} testId="role-badge" size="sm" />
  );
}
