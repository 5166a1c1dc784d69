// Plans (issue 49): what a user gets in one step, at creation (POST /api/users with plan_id), at
// renewal (POST /api/users/{id}/renew) or from the lifecycle job (the user's next_plan_id). See
// docs/PLANS.md for the rules.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { DataLimitReset } from "../users/users.schemas.ts";

export const MAX_PLAN_GROUPS = 100;

const PlanName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: "\\S",
  format: "line",
  description:
    "1-64 characters, trimmed, unique; one line: no control characters, line breaks or bidi overrides",
});

const DataLimit = Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], {
  description: "bytes per period the user gets; null = unlimited",
});
const DurationDays = Type.Union([Type.Integer({ minimum: 1, maximum: 36_600 }), Type.Null()], {
  description: "days of access the plan gives; null = never expires",
});
const StartOnHold = Type.Boolean({
  description:
    "a user created from the plan waits on_hold: duration_days count from their first traffic (or on_hold_timeout_days). Needs duration_days. Renewals start at once",
});
const OnHoldTimeoutDays = Type.Union([Type.Integer({ minimum: 1, maximum: 36_600 }), Type.Null()], {
  description:
    "with start_on_hold: the clock starts after this many days even without traffic; null = only at first traffic",
});
const IpLimit = Type.Union([Type.Integer({ minimum: 0, maximum: 1000 }), Type.Null()], {
  description: "the user's ip_limit (docs/FAIR-USE.md); null: the settings' default; 0: unlimited",
});
const DeviceLimit = Type.Union([Type.Integer({ minimum: 0, maximum: 1000 }), Type.Null()], {
  description:
    "the user's device_limit (docs/FAIR-USE.md, devices): null: the subscription settings' default; 0: unlimited",
});
const RenewFrom = Type.Union([Type.Literal("expiry"), Type.Literal("now")], {
  description:
    "a renewal adds duration_days to the user's current expiry (expiry; from now when it has passed or there is none) or to now (now)",
});
const ResetUsage = Type.Boolean({
  description: "a renewal starts used_bytes over at 0 (lifetime_used_bytes kept); false keeps it",
});
const GroupIds = Type.Array(Uuid, {
  maxItems: MAX_PLAN_GROUPS,
  uniqueItems: true,
  description: "groups a user joins with the plan (at creation: their groups; at renewal: joined, none left)",
});

export const Plan = Type.Object({
  id: Uuid,
  name: Type.String(),
  data_limit_bytes: DataLimit,
  data_limit_reset: DataLimitReset,
  duration_days: DurationDays,
  start_on_hold: Type.Boolean(),
  on_hold_timeout_days: OnHoldTimeoutDays,
  ip_limit: IpLimit,
  device_limit: DeviceLimit,
  renew_from: RenewFrom,
  reset_usage: Type.Boolean(),
  group_ids: Type.Array(Uuid, { description: "by group name" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Plan = Static<typeof Plan>;

/** What a plan holds, each optional: the create and the update take the same fields. */
const PlanTerms = {
  data_limit_bytes: Type.Optional(DataLimit),
  data_limit_reset: Type.Optional(DataLimitReset),
  duration_days: Type.Optional(DurationDays),
  start_on_hold: Type.Optional(StartOnHold),
  on_hold_timeout_days: Type.Optional(OnHoldTimeoutDays),
  ip_limit: Type.Optional(IpLimit),
  device_limit: Type.Optional(DeviceLimit),
  renew_from: Type.Optional(RenewFrom),
  reset_usage: Type.Optional(ResetUsage),
  group_ids: Type.Optional(GroupIds),
};

export const PlanCreate = Type.Object(
  { name: PlanName, ...PlanTerms },
  {
    additionalProperties: false,
    description:
      "defaults: unlimited, no_reset, never expires, not on hold, the default ip_limit and device_limit, renew_from expiry, reset_usage false, no groups",
  },
);
export type PlanCreate = Static<typeof PlanCreate>;

export const PlanUpdate = Type.Object(
  { name: Type.Optional(PlanName), ...PlanTerms },
  {
    additionalProperties: false,
    description:
      "the fields present; group_ids is the whole new set. Users made from the plan keep what they got",
  },
);
export type PlanUpdate = Static<typeof PlanUpdate>;
