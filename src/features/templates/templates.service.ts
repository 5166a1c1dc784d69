// Template use cases. Every save re-validates the whole template (checkTemplate) and records the
// core flavors it builds on; a template in use by inbounds cannot be deleted.
import { randomUUID } from "node:crypto";
import type { CoreFlavor } from "../../cores/core-types.ts";
import { ConflictError, NotFoundError, UnprocessableError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import type { JsonObject, JsonValue } from "../../lib/json.ts";
import { trimName } from "../../lib/names.ts";
import { checkTemplate } from "./check.ts";
import type { TemplateDefinition } from "./definition.ts";
import type { TemplateVariable } from "./render.ts";
import type { TemplatePatch, TemplateRecord, TemplatesRepository } from "./templates.repository.ts";
import type { Template, TemplateCreate, TemplateUpdate } from "./templates.schemas.ts";

/** How many inbounds use a template; answered by the inbounds' repository (wired in deps.ts). */
export interface TemplateUsage {
  countByTemplate(templateId: string): Promise<number>;
}

type VariableInput = NonNullable<TemplateCreate["variables"]>[number];

export class TemplatesService {
  constructor(
    private readonly templates: TemplatesRepository,
    private readonly usage: TemplateUsage,
    private readonly events: Changes,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(): Promise<Template[]> {
    return this.templates.listTemplates();
  }

  get(id: string): Promise<Template> {
    return this.templates.getTemplate(id);
  }

  findByName(name: string): Promise<Template | undefined> {
    return this.templates.findTemplateByName(name.trim());
  }

  async create(input: TemplateCreate): Promise<Template> {
    const name = trimName(input.name);
    await this.#checkNameFree(name);
    const definition: TemplateDefinition = {
      config: input.config as JsonObject,
      variables: (input.variables ?? []).map(toVariable),
      client_flow: input.client_flow ?? "",
    };
    const now = this.now().toISOString();
    const record: TemplateRecord = {
      id: randomUUID(),
      name,
      description: input.description ?? "",
      ...definition,
      supported_cores: await validate(definition),
      created_at: now,
      updated_at: now,
    };
    await this.templates.insertTemplate(record);
    return this.templates.getTemplate(record.id);
  }

  async update(id: string, input: TemplateUpdate): Promise<Template> {
    const current = await this.templates.getTemplate(id);
    const patch: TemplatePatch = {};
    if (input.name !== undefined) {
      patch.name = trimName(input.name);
      if (patch.name !== current.name) await this.#checkNameFree(patch.name);
    }
    if (input.description !== undefined) patch.description = input.description;
    // Request bodies are parsed JSON, so the config is a JSON object.
    if (input.config !== undefined) patch.config = input.config as JsonObject;
    if (input.variables !== undefined) patch.variables = input.variables.map(toVariable);
    if (input.client_flow !== undefined) patch.client_flow = input.client_flow;
    patch.supported_cores = await validate({
      config: patch.config ?? current.config,
      variables: patch.variables ?? current.variables,
      client_flow: patch.client_flow ?? current.client_flow,
    });
    const updated = await this.templates.updateTemplate(id, patch, this.now().toISOString());
    if (updated === undefined) throw new NotFoundError("template", id);
    // The inbounds made from it get fresh links and are applied again before this answers.
    await this.events.emit("templateChanged", id);
    return updated;
  }

  async delete(id: string): Promise<void> {
    await this.templates.getTemplate(id);
    const inbounds = await this.usage.countByTemplate(id);
    if (inbounds > 0) {
      throw new ConflictError(`template ${id} is used by ${inbounds} inbound(s)`, "template_in_use");
    }
    if (!(await this.templates.deleteTemplate(id))) throw new NotFoundError("template", id);
  }

  async #checkNameFree(name: string): Promise<void> {
    if (await this.templates.findTemplateByName(name)) {
      throw new ConflictError(`a template named ${name} exists already`, "template_name_taken");
    }
  }
}

/** The flavors the template builds on, or a 422 listing what is wrong. */
async function validate(definition: TemplateDefinition): Promise<CoreFlavor[]> {
  const result = await checkTemplate(definition);
  if (result.ok) return result.supportedCores;
  const summary =
    result.code === "template_invalid"
      ? "the template is invalid"
      : "the template builds on no supported core (xray, v2ray)";
  const listed = result.problems.map((problem) => `${problem.path} ${problem.message}`).join("; ");
  throw new UnprocessableError(`${summary}: ${listed}`, result.problems, result.code);
}

/** Request bodies are parsed JSON, so `default` is JSON; absent means null. */
function toVariable(input: VariableInput): TemplateVariable {
  return {
    name: input.name,
    description: input.description ?? "",
    default: input.default === undefined ? null : (input.default as JsonValue),
    required: input.required ?? false,
  };
}
