// An admin's role, the same colour everywhere (navigation, admins, API keys).
import type { Role } from "../api/types.ts";
import { STATE_COLORS, StateBadge } from "./StatusBadge.tsx";

export function RoleBadge({ role }: { role: Role }) {
  return (
    <StateBadge
      state={role}
      colors={STATE_COLORS.role}
      label={`role.${role}`}
      testId="role-badge"
      size="sm"
    />
  );
}
