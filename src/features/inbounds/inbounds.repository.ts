// Server inbounds in SQL. variable_values and link_params are JSON text, the generated secrets stay
// sealed; the unique (server, tag) and (server, port) indexes turn a race into a 409.
import type { Kysely, Selectable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database, ServerInboundsTable } from "../../db/types.ts";
import { UniqueViolationError } from "../../db/unique-violation.ts";
import type { SyncState } from "../../domain/sync.ts";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import type { JsonValue } from "../../lib/json.ts";
import type { SyncInbound } from "../sync/stores.ts";
import type { LinkParams } from "./link-params.ts";

/** An inbound row: what provisioning needs (sync's SyncInbound) with all its link parameters. */
export type InboundRow = Omit<SyncInbound, "link_params"> & {
  link_params: LinkParams;
  synced_at: string | null;
  created_at: string;
  updated_at: string;
};

export type InboundWithTemplate = InboundRow & { template_name: string };

export type InboundPatch = Partial<
  Pick<
    InboundRow,
    | "tag"
    | "port"
    | "certificate_id"
    | "variable_values"
    | "link_params"
    | "is_active"
    | "sync_state"
    | "sync_error"
  >
>;

export class InboundsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async listInbounds(serverId: string): Promise<InboundWithTemplate[]> {
    const rows = await this.#withTemplate()
      .where("i.server_id", "=", serverId)
      .orderBy("i.created_at")
      .orderBy("i.id")
      .execute();
    return rows.map((row) => ({ ...toRow(row), template_name: row.template_name }));
  }

  async findInbound(serverId: string, id: string): Promise<InboundWithTemplate | undefined> {
    const row = await this.#withTemplate()
      .where("i.server_id", "=", serverId)
      .where("i.id", "=", id)
      .executeTakeFirst();
    return row && { ...toRow(row), template_name: row.template_name };
  }

  async getInbound(serverId: string, id: string): Promise<InboundWithTemplate> {
    const inbound = await this.findInbound(serverId, id);
    if (inbound === undefined) throw new NotFoundError("inbound", id);
    return inbound;
  }

  async findInboundById(id: string): Promise<InboundRow | undefined> {
    const row = await this.db
      .selectFrom("server_inbounds")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toRow(row);
  }

  async listByServer(serverId: string): Promise<InboundRow[]> {
    const rows = await this.db
      .selectFrom("server_inbounds")
      .selectAll()
      .where("server_id", "=", serverId)
      .execute();
    return rows.map(toRow);
  }

  /** Ids of the inbounds that use a template or a certificate, for re-applying them after a change. */
  async listIdsUsing(column: "template_id" | "certificate_id", id: string): Promise<string[]> {
    const rows = await this.db.selectFrom("server_inbounds").select("id").where(column, "=", id).execute();
    return rows.map((row) => row.id);
  }

  async countByTemplate(templateId: string): Promise<number> {
    const row = await this.db
      .selectFrom("server_inbounds")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("template_id", "=", templateId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Which of tag and port another inbound of the server has already. */
  async findClashes(
    serverId: string,
    wanted: { tag?: string; port?: number },
    exceptId?: string,
  ): Promise<{ isTagTaken: boolean; isPortTaken: boolean }> {
    let query = this.db
      .selectFrom("server_inbounds")
      .select(["tag", "port"])
      .where("server_id", "=", serverId)
      .where((eb) => eb.or([eb("tag", "=", wanted.tag ?? ""), eb("port", "=", wanted.port ?? 0)]));
    if (exceptId !== undefined) query = query.where("id", "!=", exceptId);
    const rows = await query.execute();
    return {
      isTagTaken: rows.some((row) => row.tag === wanted.tag),
      isPortTaken: rows.some((row) => row.port === wanted.port),
    };
  }

  async insertInbound(row: InboundRow): Promise<void> {
    await this.db
      .insertInto("server_inbounds")
      .values(toColumns(row))
      .execute()
      .catch((error: unknown) => rethrowClash(error, row));
  }

  async updateInbound(id: string, patch: InboundPatch, updatedAt: string): Promise<void> {
    const { variable_values, link_params, ...plain } = patch;
    await this.db
      .updateTable("server_inbounds")
      .set({
        ...plain,
        ...(variable_values === undefined ? {} : { variable_values: JSON.stringify(variable_values) }),
        ...(link_params === undefined ? {} : { link_params: JSON.stringify(link_params) }),
        updated_at: updatedAt,
      })
      .where("id", "=", id)
      .execute()
      .catch((error: unknown) => rethrowClash(error, patch));
  }

  /** Sync bookkeeping: not an edit of the inbound, so updated_at stays. */
  setSyncState(id: string, state: SyncState, error: string | null, syncedAt?: string): Promise<void> {
    return this.setSyncStateMany([id], state, error, syncedAt);
  }

  /** The same for many inbounds at once (the reconciler settles them together). */
  async setSyncStateMany(
    ids: readonly string[],
    state: SyncState,
    error: string | null,
    syncedAt?: string,
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable("server_inbounds")
      .set({
        sync_state: state,
        sync_error: error,
        ...(syncedAt === undefined ? {} : { synced_at: syncedAt }),
      })
      .where("id", "in", ids)
      .execute();
  }

  async deleteInbound(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("server_inbounds").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  #withTemplate() {
    return this.db
      .selectFrom("server_inbounds as i")
      .innerJoin("templates as t", "t.id", "i.template_id")
      .selectAll("i")
      .select("t.name as template_name");
  }
}

/** The service checks first; two requests racing for one tag or port meet the unique indexes here
 * (db/unique-violation.ts makes it a 409 anyway; this names the port or tag in the detail). */
function rethrowClash(error: unknown, wanted: { tag?: string; port?: number }): never {
  if (!(error instanceof UniqueViolationError)) throw error;
  if (error.is("server_inbounds", ["server_id", "port"])) throw portTaken(wanted.port);
  if (error.is("server_inbounds", ["server_id", "tag"])) throw tagTaken(wanted.tag);
  throw error;
}

export function portTaken(port: number | undefined): ConflictError {
  return new ConflictError(`port ${port} is already used by another inbound of this server`, "port_taken");
}

export function tagTaken(tag: string | undefined): ConflictError {
  return new ConflictError(`tag ${tag} is already used by another inbound of this server`, "tag_taken");
}

function toColumns(row: InboundRow) {
  return {
    ...row,
    variable_values: JSON.stringify(row.variable_values),
    link_params: JSON.stringify(row.link_params),
  };
}

function toRow(row: Selectable<ServerInboundsTable>): InboundRow {
  return {
    id: row.id,
    server_id: row.server_id,
    template_id: row.template_id,
    tag: row.tag,
    port: row.port,
    certificate_id: row.certificate_id,
    variable_values: JSON.parse(row.variable_values) as Record<string, JsonValue>,
    secrets_sealed: row.secrets_sealed,
    link_params: JSON.parse(row.link_params) as LinkParams,
    is_active: read.bool(row.is_active),
    sync_state: row.sync_state,
    sync_error: row.sync_error,
    synced_at: read.optionalTimestamp(row.synced_at),
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
  };
}
