// Templates in SQL. config, variables and supported_cores are JSON text; the row mapper parses them
// and adds the facts read from the config (protocol, security, ...), which are never stored.
import type { Kysely, Selectable } from "kysely";
import type { CoreFlavor } from "../../cores/core-types.ts";
import { read } from "../../db/dialect.ts";
import type { Database, TemplatesTable } from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { JsonObject } from "../../lib/json.ts";
import { CLIENT_FLOWS, type ClientFlow, describeConfig } from "./definition.ts";
import { placeholdersOf, type TemplateVariable } from "./render.ts";
import type { Template } from "./templates.schemas.ts";

/** What is stored; everything else in a Template is derived from it. */
export type TemplateRecord = {
  id: string;
  name: string;
  description: string;
  config: JsonObject;
  variables: TemplateVariable[];
  client_flow: ClientFlow;
  supported_cores: CoreFlavor[];
  created_at: string;
  updated_at: string;
};

export type TemplatePatch = Partial<Omit<TemplateRecord, "id" | "created_at" | "updated_at">>;

export class TemplatesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async listTemplates(): Promise<Template[]> {
    const rows = await this.db.selectFrom("templates").selectAll().orderBy("name").execute();
    return rows.map(toTemplate);
  }

  async findTemplate(id: string): Promise<Template | undefined> {
    const row = await this.db.selectFrom("templates").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toTemplate(row);
  }

  async getTemplate(id: string): Promise<Template> {
    const template = await this.findTemplate(id);
    if (template === undefined) throw new NotFoundError("template", id);
    return template;
  }

  async findTemplateByName(name: string): Promise<Template | undefined> {
    const row = await this.db.selectFrom("templates").selectAll().where("name", "=", name).executeTakeFirst();
    return row && toTemplate(row);
  }

  async insertTemplate(record: TemplateRecord): Promise<void> {
    const { config, variables, supported_cores, ...plain } = record;
    await this.db
      .insertInto("templates")
      .values({
        ...plain,
        config: JSON.stringify(config),
        variables: JSON.stringify(variables),
        supported_cores: JSON.stringify(supported_cores),
      })
      .execute();
  }

  /** Applies only the given fields; returns the updated template or undefined when the id is unknown. */
  async updateTemplate(id: string, patch: TemplatePatch, updatedAt: string): Promise<Template | undefined> {
    const result = await this.db
      .updateTable("templates")
      .set({ ...patchRow(patch), updated_at: updatedAt })
      .where("id", "=", id)
      .executeTakeFirst();

    return Number(result.numUpdatedRows) === 0 ? undefined : this.findTemplate(id);
  }

  async deleteTemplate(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("templates").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function patchRow(
  record: TemplatePatch,
): Partial<Omit<Selectable<TemplatesTable>, "created_at" | "updated_at">> {
  const { config, variables, supported_cores, ...plain } = record;
  return {
    ...plain,
    ...(config === undefined ? {} : { config: JSON.stringify(config) }),
    ...(variables === undefined ? {} : { variables: JSON.stringify(variables) }),
    ...(supported_cores === undefined ? {} : { supported_cores: JSON.stringify(supported_cores) }),
  };
}

function toTemplate(row: Selectable<TemplatesTable>): Template {
  const config = JSON.parse(row.config) as JsonObject;
  const facts = describeConfig(config, placeholdersOf(config).includes("domain"));
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    config,
    variables: JSON.parse(row.variables) as TemplateVariable[],
    client_flow: CLIENT_FLOWS.find((flow) => flow === row.client_flow) ?? "",
    supported_cores: JSON.parse(row.supported_cores) as CoreFlavor[],
    protocol: facts.protocol,
    security: facts.security,
    network: facts.network,
    needs_certificate: facts.needs_certificate,
    uses_reality: facts.uses_reality,
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
  };
}
