// Servers in SQL. The sealed credentials column is read only through findCredentials, so a
// Server object never carries them.
import type { Kysely, Selectable } from "kysely";
import { CORE_CAPABILITIES, type CoreCapability, isWireLayout } from "../../cores/wire-layout.ts";
import { read } from "../../db/dialect.ts";
import type { Database, ServersTable } from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { Server } from "./servers.schemas.ts";

const COLUMNS = [
  "id",
  "name",
  "hostname",
  "grpc_hostname",
  "grpc_port",
  "status",
  "default_certificate_id",
  "api_credentials_sealed",
  "core",
  "core_version",
  "wire_layout",
  "wire_layout_pinned",
  "core_capabilities",
  "last_error",
  "usage_coefficient",
  "connection",
  "node_base_config",
  "created_at",
  "updated_at",
] as const;

export type ServerRow = Server & { sealedCredentials: string | null; nodeBaseConfig: string | null };
export type ServerPatch = Partial<
  Pick<
    Selectable<ServersTable>,
    | "name"
    | "hostname"
    | "grpc_hostname"
    | "grpc_port"
    | "status"
    | "default_certificate_id"
    | "api_credentials_sealed"
    | "core"
    | "core_version"
    | "wire_layout"
    | "core_capabilities"
    | "last_error"
    | "usage_coefficient"
    | "connection"
    | "node_base_config"
  >
> & { last_seen_at?: string; wire_layout_pinned?: boolean };

export class ServersRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async listServers(): Promise<ServerRow[]> {
    const rows = await this.db
      .selectFrom("servers")
      .select(COLUMNS)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toServer);
  }

  async findServer(id: string): Promise<ServerRow | undefined> {
    const row = await this.db.selectFrom("servers").select(COLUMNS).where("id", "=", id).executeTakeFirst();
    return row && toServer(row);
  }

  async getServer(id: string): Promise<ServerRow> {
    const server = await this.findServer(id);
    if (server === undefined) throw new NotFoundError("server", id);
    return server;
  }

  async findServerByName(name: string): Promise<ServerRow | undefined> {
    const row = await this.db
      .selectFrom("servers")
      .select(COLUMNS)
      .where("name", "=", name)
      .executeTakeFirst();
    return row && toServer(row);
  }

  async insertServer(server: Server, sealedCredentials: string | null): Promise<void> {
    const { has_credentials: _, core_capabilities: capabilities, ...columns } = server;
    await this.db
      .insertInto("servers")
      .values({
        ...columns,
        core_capabilities: capabilities === null ? null : JSON.stringify(capabilities),
        api_credentials_sealed: sealedCredentials,
        last_seen_at: null,
      })
      .execute();
  }

  async updateServer(id: string, patch: ServerPatch, updatedAt: string): Promise<void> {
    await this.db
      .updateTable("servers")
      .set({ ...patch, updated_at: updatedAt })
      .where("id", "=", id)
      .execute();
  }

  /** Bookkeeping of what a core said (status, detected layout): updated_at stays. */
  async setStatus(
    id: string,
    patch: Pick<
      ServerPatch,
      "status" | "last_error" | "last_seen_at" | "core" | "core_version" | "wire_layout" | "core_capabilities"
    >,
  ): Promise<void> {
    await this.db.updateTable("servers").set(patch).where("id", "=", id).execute();
  }

  /**
   * Health in subscriptions (migration 0024): when `enabled`, servers offline since `cutoff` or
   * earlier are left out of /sub; every other server is not (the setting off, its minutes raised).
   * Single statements, so a server coming back meanwhile (its status trigger clears the flag) is
   * never left out by a stale read. Each change fires the change feed for the server's inbounds.
   */
  async markLeftOutOfSub(enabled: boolean, cutoff: string): Promise<{ leftOut: number; back: number }> {
    let leftOut = 0;
    if (enabled) {
      const result = await this.db
        .updateTable("servers")
        .set({ left_out_of_sub: true })
        .where("status", "=", "offline")
        .where("offline_since", "<=", cutoff)
        .where("left_out_of_sub", "=", false)
        .executeTakeFirst();
      leftOut = Number(result.numUpdatedRows);
    }
    const back = await this.db
      .updateTable("servers")
      .set({ left_out_of_sub: false })
      .where("left_out_of_sub", "=", true)
      .where((eb) =>
        enabled
          ? eb.or([
              eb("status", "!=", "offline"),
              eb("offline_since", "is", null),
              eb("offline_since", ">", cutoff),
            ])
          : eb.lit(true),
      )
      .executeTakeFirst();
    return { leftOut, back: Number(back.numUpdatedRows) };
  }

  async deleteServer(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("servers").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async countServersUsingCertificate(certificateId: string): Promise<number> {
    const row = await this.db
      .selectFrom("servers")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("default_certificate_id", "=", certificateId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}

function toServer(row: Pick<Selectable<ServersTable>, (typeof COLUMNS)[number]>): ServerRow {
  return {
    id: row.id,
    name: row.name,
    hostname: row.hostname,
    grpc_hostname: row.grpc_hostname,
    grpc_port: row.grpc_port,
    status: row.status,
    default_certificate_id: row.default_certificate_id,
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
    has_credentials: row.api_credentials_sealed !== null,
    core: row.core,
    core_version: row.core_version,
    wire_layout: isWireLayout(row.wire_layout) ? row.wire_layout : null,
    wire_layout_pinned: read.bool(row.wire_layout_pinned),
    core_capabilities: readCapabilities(row.core_capabilities),
    last_error: row.last_error,
    usage_coefficient: Number(row.usage_coefficient),
    connection: row.connection === "node" ? "node" : "direct",
    sealedCredentials: row.api_credentials_sealed,
    nodeBaseConfig: row.node_base_config,
  };
}

function readCapabilities(text: string | null): CoreCapability[] | null {
  if (text === null) return null;
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) return null;
  return parsed.filter((name): name is CoreCapability =>
    (CORE_CAPABILITIES as readonly unknown[]).includes(name),
  );
}
