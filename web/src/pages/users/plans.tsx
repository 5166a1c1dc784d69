// What a plan decides for a user (docs/PLANS.md): the form values that show the fields a create with
// plan_id may not also send (locked; the fields are in planDecides.ts), and what a renewal would make
// of a user.
import type { Plan, User } from "../../api/types.ts";
import { NEW_USER, UNITS, type Unit, type UserValues } from "./userForm.tsx";

function localInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

const DAY_MS = 86_400_000;

/** The limit fields as a user created from the plan now gets them (shown locked in the dialog). */
export function planValues(plan: Plan | undefined, now = Date.now()): Partial<UserValues> {
  if (plan === undefined) {
    // No plan: every limit field as a new user starts.
    const {
      name: _name,
      comment: _comment,
      announce: _announce,
      telegram_id: _telegram,
      ...limits
    } = NEW_USER;
    return limits;
  }
  const limit = plan.data_limit_bytes;
  const unit: Unit = limit !== null && limit > 0 && limit % UNITS.GiB !== 0 ? "MiB" : "GiB";
  const onHold = plan.start_on_hold && plan.duration_days !== null;
  return {
    data_limit_bytes: limit === null ? "" : Number((limit / UNITS[unit]).toFixed(3)),
    unit,
    data_limit_reset: plan.data_limit_reset,
    status: onHold ? "on_hold" : "active",
    expire_at:
      onHold || plan.duration_days === null ? "" : localInput(new Date(now + plan.duration_days * DAY_MS)),
    on_hold_duration_seconds: onHold ? (plan.duration_days ?? "") : "",
    ip_limit: plan.ip_limit ?? "",
    device_limit: plan.device_limit ?? "",
  };
}

/**
 * The expiry a renewal with the plan gives (null: never expires), as the service computes it: the
 * days after the current expiry when the plan renews from it and it is still ahead, else after now.
 */
export function renewedExpiry(
  user: Pick<User, "expire_at">,
  plan: Pick<Plan, "duration_days" | "renew_from">,
  now = Date.now(),
): Date | null {
  if (plan.duration_days === null) return null;
  const current = user.expire_at === null ? null : Date.parse(user.expire_at);
  const from = plan.renew_from === "expiry" && current !== null && current > now ? current : now;
  return new Date(from + plan.duration_days * DAY_MS);
}
