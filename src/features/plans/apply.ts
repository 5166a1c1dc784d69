// What a plan gives a user, as pure functions of the plan, the user's numbers and a clock: the fields
// of a user created from it, and what a renewal (by an admin, or the lifecycle job's next plan)
// writes. plans.service.ts does the I/O; docs/PLANS.md states the same rules.
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { statusAfterWrite } from "../users/status.ts";
import type { PlanApplication } from "./plans.repository.ts";
import type { Plan } from "./plans.schemas.ts";

const DAY_MS = 86_400_000;

export type PlanNumbers = Pick<
  Plan,
  | "data_limit_bytes"
  | "data_limit_reset"
  | "duration_days"
  | "start_on_hold"
  | "on_hold_timeout_days"
  | "ip_limit"
  | "device_limit"
  | "renew_from"
  | "reset_usage"
>;

/** The lifecycle fields of a user created from the plan. */
export type CreationFields = {
  status?: "on_hold";
  data_limit_bytes: number | null;
  data_limit_reset: DataLimitReset;
  ip_limit: number | null;
  device_limit: number | null;
  expire_at: string | null;
  on_hold_duration_seconds: number | null;
  on_hold_timeout_at: string | null;
};

export function creationFields(plan: PlanNumbers, now: Date): CreationFields {
  const common = {
    data_limit_bytes: plan.data_limit_bytes,
    data_limit_reset: plan.data_limit_reset,
    ip_limit: plan.ip_limit,
    device_limit: plan.device_limit,
  };
  if (plan.start_on_hold && plan.duration_days !== null) {
    return {
      ...common,
      status: "on_hold",
      expire_at: null,
      on_hold_duration_seconds: plan.duration_days * 86_400,
      on_hold_timeout_at:
        plan.on_hold_timeout_days === null
          ? null
          : new Date(now.getTime() + plan.on_hold_timeout_days * DAY_MS).toISOString(),
    };
  }
  return {
    ...common,
    expire_at:
      plan.duration_days === null
        ? null
        : new Date(now.getTime() + plan.duration_days * DAY_MS).toISOString(),
    on_hold_duration_seconds: null,
    on_hold_timeout_at: null,
  };
}

export type RenewedUser = {
  status: UserStatus;
  used_bytes: number;
  expire_at: string | null;
};

/**
 * A renewal: the plan's limit, period, IP and device limits; expire_at = duration_days after the current
 * expiry (renew_from expiry, while it is still ahead) or after now; used_bytes 0 when reset_usage. An
 * on_hold user starts at once; a disabled one stays disabled; the rest are judged from the new numbers.
 */
export function renewal(plan: PlanNumbers, user: RenewedUser, now: Date): PlanApplication {
  const current = user.expire_at === null ? null : Date.parse(user.expire_at);
  const from =
    plan.renew_from === "expiry" && current !== null && current > now.getTime() ? current : now.getTime();
  const expireAt =
    plan.duration_days === null ? null : new Date(from + plan.duration_days * DAY_MS).toISOString();
  const usedBytes = plan.reset_usage ? 0 : user.used_bytes;
  const status = statusAfterWrite(
    user.status === "on_hold" ? "active" : undefined,
    {
      status: user.status,
      data_limit_bytes: plan.data_limit_bytes,
      data_limit_reset: plan.data_limit_reset,
      used_bytes: usedBytes,
      expire_at: expireAt,
      on_hold_duration_seconds: null,
    },
    now,
  );
  return {
    status,
    data_limit_bytes: plan.data_limit_bytes,
    data_limit_reset: plan.data_limit_reset,
    expire_at: expireAt,
    ip_limit: plan.ip_limit,
    device_limit: plan.device_limit,
    isUsageReset: plan.reset_usage,
  };
}
