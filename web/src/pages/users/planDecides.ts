// The fields a plan decides for a user, in a module of its own with no imports so that
// test/web/plan-decides.test.ts can hold it against the API's PLAN_FIELDS (features/plans/plans.service.ts):
// web/src/ may not import from src/, so the two lists are kept equal by that test.

/** The API refuses these next to plan_id (400, one error per field): the plan decides them. */
export const PLAN_DECIDES = [
  "status",
  "data_limit_bytes",
  "data_limit_reset",
  "expire_at",
  "on_hold_duration_seconds",
  "on_hold_timeout_at",
  "ip_limit",
  "device_limit",
  "group_ids",
] as const;
