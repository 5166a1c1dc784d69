// inbound_hosts in SQL. Positions are 0..n-1 per inbound; a reorder rewrites them in one transaction.
// Every write fires migration 0022's triggers, which tell the subscription cache.
import type { Kysely, Selectable } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { Database, InboundHostsTable } from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { HostFormat, HostFragment, HostMux, HostNoise, HostSpec } from "./host-spec.ts";

export type StoredHost = HostSpec & {
  id: string;
  inboundId: string;
  position: number;
  isDisabled: boolean;
  createdAt: string;
  updatedAt: string;
};

/** The columns of a host's fields (JSON text for lists and objects). */
export type HostColumns = {
  address: string | null;
  port: number | null;
  remark: string | null;
  sni: string;
  host: string;
  path: string | null;
  alpn: string | null;
  fingerprint: string | null;
  security: HostSpec["security"];
  allow_insecure: boolean;
  mux: string | null;
  fragment: string | null;
  noise: string | null;
  is_disabled: boolean;
  exclude_from: string;
  follows_health: boolean;
};

export function columnsOf(host: HostSpec & { isDisabled: boolean }): HostColumns {
  const text = (value: unknown) => (value === null ? null : JSON.stringify(value));
  return {
    address: host.address,
    port: host.port,
    remark: host.remark,
    sni: JSON.stringify(host.sni),
    host: JSON.stringify(host.host),
    path: host.path,
    alpn: text(host.alpn),
    fingerprint: host.fingerprint,
    security: host.security,
    allow_insecure: host.allowInsecure,
    mux: text(host.mux),
    fragment: text(host.fragment),
    noise: text(host.noise),
    is_disabled: host.isDisabled,
    exclude_from: JSON.stringify(host.excludeFrom),
    follows_health: host.followsHealth,
  };
}

export class HostsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async listHosts(inboundId: string): Promise<StoredHost[]> {
    const rows = await this.db
      .selectFrom("inbound_hosts")
      .selectAll()
      .where("server_inbound_id", "=", inboundId)
      .orderBy("position")
      .orderBy("id")
      .execute();
    return rows.map(toHost);
  }

  async getHost(inboundId: string, id: string): Promise<StoredHost> {
    const row = await this.db
      .selectFrom("inbound_hosts")
      .selectAll()
      .where("server_inbound_id", "=", inboundId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (row === undefined) throw new NotFoundError("host", id);
    return toHost(row);
  }

  /** Adds the host after the inbound's last one. */
  async insertHost(inboundId: string, id: string, columns: HostColumns, at: string): Promise<StoredHost> {
    await this.db.transaction().execute(async (trx) => {
      await this.#lockInbound(trx, inboundId);
      const last = await trx
        .selectFrom("inbound_hosts")
        .select((eb) => eb.fn.max("position").as("position"))
        .where("server_inbound_id", "=", inboundId)
        .executeTakeFirst();
      const position = last?.position == null ? 0 : Number(last.position) + 1;
      await trx
        .insertInto("inbound_hosts")
        .values({ id, server_inbound_id: inboundId, position, ...columns, created_at: at, updated_at: at })
        .execute();
    });
    return this.getHost(inboundId, id);
  }

  /**
   * Host writes of one inbound one at a time: PostgreSQL locks the inbound's row until the
   * transaction ends (SQLite has one writer anyway), so positions stay 0..n-1 under concurrency.
   */
  async #lockInbound(trx: Kysely<Database>, inboundId: string): Promise<void> {
    let query = trx.selectFrom("server_inbounds").select("id").where("id", "=", inboundId);
    if (this.dialect === "postgres") query = query.forUpdate();
    if ((await query.executeTakeFirst()) === undefined) throw new NotFoundError("inbound", inboundId);
  }

  async updateHost(inboundId: string, id: string, columns: HostColumns, at: string): Promise<StoredHost> {
    const result = await this.db
      .updateTable("inbound_hosts")
      .set({ ...columns, updated_at: at })
      .where("server_inbound_id", "=", inboundId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new NotFoundError("host", id);
    return this.getHost(inboundId, id);
  }

  async deleteHost(inboundId: string, id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await this.#lockInbound(trx, inboundId);
      const row = await trx
        .deleteFrom("inbound_hosts")
        .where("server_inbound_id", "=", inboundId)
        .where("id", "=", id)
        .returning("position")
        .executeTakeFirst();
      if (row === undefined) throw new NotFoundError("host", id);
      await trx
        .updateTable("inbound_hosts")
        .set((eb) => ({ position: eb("position", "-", 1) }))
        .where("server_inbound_id", "=", inboundId)
        .where("position", ">", row.position)
        .execute();
    });
  }

  /**
   * Sets the order to `ids` when they are exactly the inbound's hosts (else false, nothing written):
   * the check and the writes in one transaction, so a host added meanwhile is never left unordered.
   */
  async reorder(inboundId: string, ids: readonly string[], at: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await this.#lockInbound(trx, inboundId);
      const rows = await trx
        .selectFrom("inbound_hosts")
        .select("id")
        .where("server_inbound_id", "=", inboundId)
        .execute();
      const current = new Set(rows.map((row) => row.id));
      if (current.size !== ids.length || ids.some((id) => !current.has(id))) return false;
      for (const [position, id] of ids.entries()) {
        await trx
          .updateTable("inbound_hosts")
          .set({ position, updated_at: at })
          .where("id", "=", id)
          .execute();
      }
      return true;
    });
  }
}

function toHost(row: HostRow): StoredHost {
  return {
    ...hostSpecOf(row),
    id: row.id,
    inboundId: row.server_inbound_id,
    position: row.position,
    isDisabled: read.bool(row.is_disabled),
    createdAt: read.timestamp(row.created_at),
    updatedAt: read.timestamp(row.updated_at),
  };
}

// The one place the table's JSON text and booleans are normalised (the subscriptions repository reads hosts through it too).
export type HostRow = Selectable<InboundHostsTable>;

function json<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

export function hostSpecOf(row: HostRow): HostSpec {
  return {
    address: row.address,
    port: row.port,
    remark: row.remark,
    sni: json<string[]>(row.sni) ?? [],
    host: json<string[]>(row.host) ?? [],
    path: row.path,
    alpn: json<string[]>(row.alpn),
    fingerprint: row.fingerprint,
    security: row.security,
    allowInsecure: read.bool(row.allow_insecure),
    mux: json<HostMux>(row.mux),
    fragment: json<HostFragment>(row.fragment),
    noise: json<HostNoise[]>(row.noise),
    excludeFrom: json<HostFormat[]>(row.exclude_from) ?? [],
    followsHealth: read.bool(row.follows_health),
  };
}
