// The words of a user's lifecycle, defined once: the table types (db/types.ts), the API schemas
// (features/users/users.schemas.ts), the lifecycle rules and the period arithmetic (lib/periods.ts)
// all name these. Values only, no behaviour: domain/ imports nothing.

/** Where a user stands (docs/ARCHITECTURE.md, glossary; the rules are in features/users/lifecycle.ts). */
export const USER_STATUSES = ["active", "disabled", "limited", "expired", "on_hold"] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

/** When a user's used_bytes starts over (lib/periods.ts computes the moments). */
export const DATA_LIMIT_RESETS = ["no_reset", "day", "week", "month", "month_rolling", "year"] as const;
export type DataLimitReset = (typeof DATA_LIMIT_RESETS)[number];

/**
 * Admitted statuses hold credentials on the cores (an on_hold user must be able to make first
 * traffic). The one definition: features/users/lifecycle.ts, the repositories and the database
 * trigger (db/triggers.ts admittedSql) all read this list.
 */
export const ADMITTED_STATUSES = ["active", "on_hold"] as const satisfies readonly UserStatus[];

export function isAdmitted(status: UserStatus): boolean {
  return (ADMITTED_STATUSES as readonly UserStatus[]).includes(status);
}
