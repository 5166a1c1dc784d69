// An admin's role, the same colour everywhere (navigation, admins, API keys).
import { Badge } from "@mantine/core";
import type { Role } from "../api/types.ts";
import { useT } from "../i18n/i18n.tsx";

const ROLE_COLORS: Record<Role, string> = {
  owner: "grape",
  operator: "blue",
  support: "teal",
  viewer: "gray",
};

export function RoleBadge({ role }: { role: Role }) {
  const t = useT();
  return (
    <Badge size="sm" variant="light" color={ROLE_COLORS[role]} data-testid="role-badge">
      {t(`role.${role}`)}
    </Badge>
  );
}
