// /api/plans (issue 49): plans in CRUD order. Creating a user from a plan and renewing with one are
// on the user routes (POST /api/users with plan_id, POST /api/users/{id}/renew).
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { Plan, PlanCreate, PlanUpdate } from "./plans.schemas.ts";
import type { PlansService } from "./plans.service.ts";

export function plansRoutes(app: App, plans: PlansService): void {
  const tags = ["plans"];

  app.get(
    "/api/plans",
    {
      schema: {
        tags,
        summary: "List plans by name",
        response: { 200: Type.Array(Plan), ...problems() },
      },
    },
    async () => plans.list(),
  );

  app.get(
    "/api/plans/:id",
    {
      schema: { tags, summary: "Get one plan", params: IdParams, response: { 200: Plan, ...problems(404) } },
    },
    async (request) => plans.get(request.params.id),
  );

  app.post(
    "/api/plans",
    {
      schema: {
        tags,
        summary:
          "Create a plan: data limit and period, duration in days (optionally starting on hold), IP limit, how a renewal counts, groups",
        body: PlanCreate,
        response: { 201: Plan, ...problems(409) },
      },
    },
    async (request, reply) => reply.code(201).send(await plans.create(request.body)),
  );

  app.put(
    "/api/plans/:id",
    {
      schema: {
        tags,
        summary:
          "Update the fields present (group_ids: the whole new set); users keep what the plan gave them",
        params: IdParams,
        body: PlanUpdate,
        response: { 200: Plan, ...problems(404, 409) },
      },
    },
    async (request) => plans.update(request.params.id, request.body),
  );

  app.delete(
    "/api/plans/:id",
    {
      schema: {
        tags,
        summary: "Delete a plan: users keep what it gave them; next_plan_id pointing to it becomes null",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await plans.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );
}
