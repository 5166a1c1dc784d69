// An admin's role, the same colour everywhere (navigation, admins, API keys).
import type { Role } from "../api/types.ts";
import { useT } from "../i18n/i18n.tsx";
import { STATE_COLORS, StateBadge } from "./StatusBadge.tsx";

export function RoleBadge({ role }: { role: Role }) {
  const t = useT();
  return (
    <StateBadge
      state={role}
      colors={STATE_COLORS.role}
      label={t(`role.${role}`)}
      testId="role-badge"
      size="sm"
    />
  );
}
