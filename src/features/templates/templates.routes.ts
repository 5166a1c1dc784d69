// /api/templates: inbound templates, in CRUD order.
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { installStarters } from "./starters.ts";
import { StarterOutcome, Template, TemplateCreate, TemplateUpdate } from "./templates.schemas.ts";
import type { TemplatesService } from "./templates.service.ts";

export function templatesRoutes(app: App, templates: TemplatesService): void {
  const tags = ["templates"];

  app.get(
    "/api/templates",
    {
      schema: {
        tags,
        summary: "List templates by name",
        response: { 200: Type.Array(Template), ...problems() },
      },
    },
    async () => templates.list(),
  );

  app.get(
    "/api/templates/:id",
    {
      schema: {
        tags,
        summary: "Get one template",
        params: IdParams,
        response: { 200: Template, ...problems(404) },
      },
    },
    async (request) => templates.get(request.params.id),
  );

  app.post(
    "/api/templates",
    {
      schema: {
        tags,
        summary: "Create a template; it is validated for every core flavor (422 when it builds on none)",
        body: TemplateCreate,
        response: { 201: Template, ...problems(409, 422) },
      },
    },
    async (request, reply) => reply.code(201).send(await templates.create(request.body)),
  );

  app.post(
    "/api/templates/starters",
    {
      schema: {
        tags,
        summary:
          "Install the starter templates (docs/TEMPLATES.md) whose names are free; a taken name is skipped, never overwritten",
        description:
          "The dashboard offers this on an empty template list; the CLI's `templates install-starters` does the same. Answers one outcome per starter, in order",
        response: { 200: Type.Array(StarterOutcome), ...problems() },
      },
    },
    async () =>
      (await installStarters(templates)).map((o) =>
        o.status === "installed"
          ? { name: o.name, status: o.status, supported_cores: o.supportedCores }
          : { name: o.name, status: o.status, reason: o.reason },
      ),
  );

  app.put(
    "/api/templates/:id",
    {
      schema: {
        tags,
        summary: "Update the fields present; the whole template is validated again",
        params: IdParams,
        body: TemplateUpdate,
        response: { 200: Template, ...problems(404, 409, 422) },
      },
    },
    async (request) => templates.update(request.params.id, request.body),
  );

  app.delete(
    "/api/templates/:id",
    {
      schema: {
        tags,
        summary: "Delete a template that no inbound uses (409 template_in_use otherwise)",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404, 409) },
      },
    },
    async (request, reply) => {
      await templates.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );
}
