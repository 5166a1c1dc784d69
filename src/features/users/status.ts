// A user's status after an admin's write: the admin asks for active, disabled or on_hold; a user asked
// to be active whose data limit is reached or whose expiry has passed is limited or expired at once,
// so the cores never see them (the lifecycle job applies the same rules to the numbers over time).
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";

export type StatusNumbers = {
  status: UserStatus;
  data_limit_bytes: number | null;
  data_limit_reset: DataLimitReset;
  used_bytes: number;
  expire_at: string | null;
  on_hold_duration_seconds: number | null;
};

/**
 * `requested` is the status the write carries (undefined: none). Without one, a user who is active,
 * limited or expired is judged again from the new numbers (a raised limit or a later expiry admits them
 * at once); disabled and on_hold stay as they are.
 */
export function statusAfterWrite(
  requested: "active" | "disabled" | "on_hold" | undefined,
  user: StatusNumbers,
  now: Date,
): UserStatus {
  const wanted =
    requested ?? (user.status === "disabled" || user.status === "on_hold" ? user.status : "active");
  if (wanted !== "active") return wanted;
  if (user.expire_at !== null && Date.parse(user.expire_at) <= now.getTime()) return "expired";
  if (user.data_limit_bytes !== null && user.used_bytes >= user.data_limit_bytes) return "limited";
  return "active";
}
