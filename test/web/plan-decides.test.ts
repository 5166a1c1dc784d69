// The create dialog leaves out what a plan decides (web/src/pages/users/planDecides.ts) and the API
// refuses those fields next to plan_id (features/plans/plans.service.ts PLAN_FIELDS). web/src/ may not
// import src/, so there are two lists; this holds them equal, so the dialog never sends a field the
// API refuses nor keeps one the API would take from the plan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PLAN_FIELDS } from "../../src/features/plans/plans.service.ts";
import { UserCreateRequest } from "../../src/features/users/users.schemas.ts";
import { PLAN_DECIDES } from "../../web/src/pages/users/planDecides.ts";

test("the dashboard's plan-decided fields are the API's, the same set", () => {
  assert.deepEqual([...PLAN_DECIDES].sort(), [...PLAN_FIELDS].sort());
  assert.equal(new Set(PLAN_DECIDES).size, PLAN_DECIDES.length, "no field twice");
});

test("each of them is a field of a user create request", () => {
  const known = Object.keys(UserCreateRequest.properties);
  assert.deepEqual(
    PLAN_DECIDES.filter((field) => !known.includes(field)),
    [],
  );
});
