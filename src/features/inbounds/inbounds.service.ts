// Inbound use cases. Every create and update is checked by the inbound builder for the server's core
// before it is stored (422 with the problems), then applied through CoreSync; a core that cannot be
// reached leaves the inbound stored with sync_state 'pending'.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { API_INBOUND_TAGS } from "../../cores/core-types.ts";
import { type BuildTarget, layoutFlavor, targetLayout, type WireLayout } from "../../cores/wire-layout.ts";
import { AppError, notFoundAt, UnprocessableError } from "../../lib/errors.ts";
import type { JsonValue } from "../../lib/json.ts";
import type { Server } from "../servers/servers.schemas.ts";
import type { ServersService } from "../servers/servers.service.ts";
import { type CoreSync, orThrow } from "../sync/core-sync.ts";
import {
  type CertificateMaterial,
  checkInbound,
  type DesiredResult,
  inboundSpec,
  renderForLinks,
} from "../sync/desired.ts";
import { generateInboundSecrets, type InboundSecrets } from "../templates/prepare.ts";
import type { Template } from "../templates/templates.schemas.ts";
import type { TemplatesService } from "../templates/templates.service.ts";
import {
  type InboundRow,
  type InboundsRepository,
  type InboundWithTemplate,
  portTaken,
  tagTaken,
} from "./inbounds.repository.ts";
import type { Inbound, InboundCreate, InboundUpdate } from "./inbounds.schemas.ts";
import { computeLinkParams, type LinkParams } from "./link-params.ts";
import { tagCandidates } from "./tags.ts";

/** An inbound as it is about to be stored: what the checks and the link parameters are made from. */
type Draft = {
  server: Server;
  template: Template;
  tag: string;
  port: number;
  certificate_id: string | null;
  variable_values: Record<string, JsonValue>;
  secrets: InboundSecrets;
};

export class InboundsService {
  constructor(
    private readonly inbounds: InboundsRepository,
    private readonly templates: TemplatesService,
    private readonly servers: ServersService,
    private readonly sync: CoreSync,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(serverId: string): Promise<Inbound[]> {
    await this.servers.get(serverId);
    return (await this.inbounds.listInbounds(serverId)).map(view);
  }

  async get(serverId: string, id: string): Promise<Inbound> {
    await this.servers.get(serverId);
    return view(await this.inbounds.getInbound(serverId, id));
  }

  async create(serverId: string, input: InboundCreate): Promise<Inbound> {
    const server = await this.servers.get(serverId);
    const template = await this.#template(input.template_id);
    const tag = input.tag ?? (await this.#freeTag(serverId, template.name, input.port));
    await this.#checkFree(serverId, tag, input.port);
    const draft: Draft = {
      server,
      template,
      tag,
      port: input.port,
      certificate_id: certificateFor(template, input.certificate_id, server.default_certificate_id),
      variable_values: (input.variable_values ?? {}) as Record<string, JsonValue>,
      secrets: generateInboundSecrets(template),
    };
    const linkParams = await this.#check(draft);
    const row = this.#newRow(draft, linkParams, input.is_active ?? true);
    return this.sync.exclusive(row.id, async () => {
      await this.inbounds.insertInbound(row);
      if (row.is_active) await this.sync.applyInbound(row.id);
      return this.get(serverId, row.id);
    });
  }

  async update(serverId: string, id: string, input: InboundUpdate): Promise<Inbound> {
    await this.servers.get(serverId);
    return this.sync.exclusive(id, async () => {
      const current = await this.inbounds.getInbound(serverId, id);
      const draft = await this.#draftOf(current, input);
      if (draft.tag !== current.tag || draft.port !== current.port) {
        await this.#checkFree(serverId, draft.tag, draft.port, id);
      }
      const link_params = await this.#check(draft);
      const { tag, port, certificate_id, variable_values } = draft;
      const is_active = input.is_active ?? current.is_active;
      const patch = { tag, port, certificate_id, variable_values, link_params, is_active };
      await this.inbounds.updateInbound(
        id,
        { ...patch, sync_state: "pending", sync_error: null },
        this.#stamp(),
      );
      if (tag !== current.tag) await this.sync.removeInbound(current);
      await this.sync.applyInbound(id);
      return this.get(serverId, id);
    });
  }

  /** Takes the inbound off its core (queued if unreachable), then deletes it with its grants. */
  async delete(serverId: string, id: string): Promise<void> {
    await this.servers.get(serverId);
    await this.sync.exclusive(id, async () => {
      const inbound = await this.inbounds.getInbound(serverId, id);
      await this.sync.removeInbound(inbound);
      await this.inbounds.deleteInbound(id);
    });
  }

  /** After a certificate or template changed: fresh link parameters, and the inbound applied again. */
  async refreshUsing(column: "certificate_id" | "template_id", id: string): Promise<void> {
    for (const inboundId of await this.inbounds.listIdsUsing(column, id)) {
      await this.sync.exclusive(inboundId, async () => {
        const inbound = await this.inbounds.findInboundById(inboundId);
        if (inbound === undefined) return;
        await this.#refreshLinks(inbound);
        if (inbound.is_active) await this.sync.applyInbound(inboundId);
      });
    }
  }

  /** After a server's name or hostname changed: links say the new host and remark. */
  async refreshServer(serverId: string): Promise<void> {
    for (const inbound of await this.inbounds.listByServer(serverId)) {
      await this.sync.exclusive(inbound.id, () => this.#refreshLinks(inbound));
    }
  }

  async #refreshLinks(inbound: InboundRow): Promise<void> {
    try {
      const draft = await this.#draftOf(inbound, {});
      const certificate = await this.#certificate(draft.certificate_id);
      const link_params = linkParamsOf(draft, certificate);
      await this.inbounds.updateInbound(inbound.id, { link_params }, inbound.updated_at);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      this.logger.warn({ inbound_id: inbound.id, code: error.code }, "link parameters not refreshed");
    }
  }

  async #draftOf(current: InboundRow, input: InboundUpdate): Promise<Draft> {
    const server = await this.servers.get(current.server_id);
    const template = await this.templates.get(current.template_id);
    const requested = input.certificate_id === undefined ? current.certificate_id : input.certificate_id;
    return {
      server,
      template,
      tag: input.tag ?? current.tag,
      port: input.port_override ?? current.port,
      certificate_id: certificateFor(template, requested ?? undefined, server.default_certificate_id),
      variable_values: (input.variable_values ?? current.variable_values) as Record<string, JsonValue>,
      secrets: this.sync.openSecrets(current.secrets_sealed),
    };
  }

  /** 422 unless the inbound builds for the server's core (for one of the template's flavors, when unknown). */
  async #check(draft: Draft): Promise<LinkParams> {
    const certificate = await this.#certificate(draft.certificate_id);
    const spec = inboundSpec(draft.template, draft, draft.secrets, certificate, []);
    const layout = await this.sync.layoutOf(draft.server.id);
    const results = targetsToCheck(draft.template, layout).map((candidate) => checkInbound(spec, candidate));
    const [first] = results;
    if (first !== undefined && !results.some((result) => result.ok)) {
      if (layout !== null)
        refuseOlderRelease(draft.template, layout, first, checkInbound(spec, layoutFlavor(layout)));
      orThrow(first);
    }
    return linkParamsOf(draft, certificate);
  }

  async #certificate(id: string | null): Promise<CertificateMaterial | undefined> {
    if (id === null) return undefined;
    try {
      return await this.sync.certificateMaterial(id);
    } catch (error) {
      throw notFoundAt(error, "body.certificate_id", "no such certificate");
    }
  }

  async #template(id: string): Promise<Template> {
    try {
      return await this.templates.get(id);
    } catch (error) {
      throw notFoundAt(error, "body.template_id", "no such template");
    }
  }

  async #freeTag(serverId: string, templateName: string, port: number): Promise<string> {
    for (const tag of tagCandidates(templateName, port)) {
      const reserved = (API_INBOUND_TAGS as readonly string[]).includes(tag);
      if (!reserved && !(await this.inbounds.findClashes(serverId, { tag })).isTagTaken) return tag;
    }
    throw new Error("unreachable: tag candidates never end");
  }

  async #checkFree(serverId: string, tag: string, port: number, exceptId?: string): Promise<void> {
    if ((API_INBOUND_TAGS as readonly string[]).includes(tag))
      throw tagTaken(`${tag} (the core's API inbound)`);
    const clash = await this.inbounds.findClashes(serverId, { tag, port }, exceptId);
    if (clash.isTagTaken) throw tagTaken(tag);
    if (clash.isPortTaken) throw portTaken(port);
  }

  #newRow(draft: Draft, linkParams: LinkParams, isActive: boolean): InboundRow {
    const now = this.#stamp();
    return {
      id: randomUUID(),
      server_id: draft.server.id,
      template_id: draft.template.id,
      tag: draft.tag,
      port: draft.port,
      certificate_id: draft.certificate_id,
      variable_values: draft.variable_values,
      secrets_sealed: this.sync.sealSecrets(draft.secrets),
      link_params: linkParams,
      is_active: isActive,
      sync_state: isActive ? "pending" : "synced",
      sync_error: null,
      synced_at: null,
      created_at: now,
      updated_at: now,
    };
  }

  #stamp(): string {
    return this.now().toISOString();
  }
}

/** The certificate an inbound uses: the one asked for, else the server's default when the template needs one. */
function certificateFor(
  template: Template,
  requested: string | undefined,
  serverDefault: string | null,
): string | null {
  if (requested !== undefined) return requested;
  if (!template.needs_certificate) return null;
  if (serverDefault !== null) return serverDefault;
  const detail = `template ${template.name} needs a certificate: give certificate_id or set the server's default_certificate_id`;
  throw new UnprocessableError(
    detail,
    [{ path: "body.certificate_id", message: "is required" }],
    "certificate_required",
  );
}

/** The server's layout when known; else every flavor the template builds on (each at its newest layout). */
function targetsToCheck(template: Template, layout: WireLayout | null): BuildTarget[] {
  if (layout === null) return template.supported_cores;
  const flavor = layoutFlavor(layout);
  if (!template.supported_cores.includes(flavor)) {
    const detail = `template ${template.name} builds on ${template.supported_cores.join(", ")}; this server's core is ${flavor}`;
    throw new UnprocessableError(
      detail,
      [{ path: "body.template_id", message: `not supported by ${flavor}` }],
      "core_unsupported",
    );
  }
  return [layout];
}

/**
 * An inbound that builds for the newest release of the server's flavor but not for the server's own
 * layout needs what this core's releases lack (XHTTP before Xray 25.1, …): 422 core_unsupported.
 */
function refuseOlderRelease(
  template: Template,
  layout: WireLayout,
  result: DesiredResult,
  onNewest: DesiredResult,
): void {
  if (result.ok || !onNewest.ok || layout === targetLayout(layoutFlavor(layout))) return;
  const listed = result.problems.map((p) => `${p.path} ${p.message}`).join("; ");
  const detail = `template ${template.name} needs a newer ${layoutFlavor(layout)} than this server's core (wire layout ${layout}): ${listed}`;
  throw new UnprocessableError(detail, result.problems, "core_unsupported");
}

function linkParamsOf(draft: Draft, certificate: CertificateMaterial | undefined): LinkParams {
  const spec = inboundSpec(draft.template, draft, draft.secrets, certificate, []);
  const rendered = renderForLinks(spec);
  if (!rendered.ok) {
    throw new UnprocessableError("the inbound does not render", rendered.problems, "invalid_inbound");
  }
  return computeLinkParams({
    json: rendered.json,
    protocol: draft.template.protocol,
    clientFlow: draft.template.client_flow,
    server: draft.server,
    tag: draft.tag,
    port: draft.port,
    ...(certificate === undefined ? {} : { certificateDomain: certificate.domain }),
  });
}

function view(row: InboundWithTemplate): Inbound {
  return {
    id: row.id,
    server_id: row.server_id,
    template_id: row.template_id,
    template_name: row.template_name,
    tag: row.tag,
    port_override: row.port,
    certificate_id: row.certificate_id,
    variable_values: row.variable_values,
    is_active: row.is_active,
    sync_state: row.sync_state,
    sync_error: row.sync_error,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
