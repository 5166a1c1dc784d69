// Node enrollment in SQL: the panel's CA row, one-time join tokens (hashes only), the agent
// certificates each server accepts, and the traffic batches already counted.
import type { Kysely, Selectable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database, NodeAuthorityTable } from "../../db/types.ts";

export type AuthorityRow = {
  caCert: string;
  caKeySealed: string;
  clientCert: string;
  clientKeySealed: string;
};

export type NodeCertificateRow = {
  fingerprint: string;
  serial: string;
  state: "current" | "pending";
  notAfter: string;
};

const AUTHORITY_ID = "panel";

export class NodesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async findAuthority(): Promise<AuthorityRow | undefined> {
    const row = await this.db
      .selectFrom("node_authority")
      .selectAll()
      .where("id", "=", AUTHORITY_ID)
      .executeTakeFirst();
    return row && toAuthority(row);
  }

  /** The first instance to create the CA wins; the others read its row. */
  async insertAuthority(authority: AuthorityRow, now: string): Promise<void> {
    await this.db
      .insertInto("node_authority")
      .values({
        id: AUTHORITY_ID,
        ca_cert: authority.caCert,
        ca_key_sealed: authority.caKeySealed,
        client_cert: authority.clientCert,
        client_key_sealed: authority.clientKeySealed,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
  }

  async updateClientCertificate(cert: string, keySealed: string, now: string): Promise<void> {
    await this.db
      .updateTable("node_authority")
      .set({ client_cert: cert, client_key_sealed: keySealed, updated_at: now })
      .where("id", "=", AUTHORITY_ID)
      .execute();
  }

  async insertEnrollment(row: {
    id: string;
    serverId: string;
    tokenHash: string;
    expiresAt: string;
    now: string;
  }): Promise<void> {
    await this.db
      .insertInto("node_enrollments")
      .values({
        id: row.id,
        server_id: row.serverId,
        token_hash: row.tokenHash,
        expires_at: row.expiresAt,
        used_at: null,
        created_at: row.now,
      })
      .execute();
  }

  /** The server an unused, unexpired token belongs to, without spending it. Otherwise undefined. */
  async openEnrollment(tokenHash: string, now: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("node_enrollments")
      .select("server_id")
      .where("token_hash", "=", tokenHash)
      .where("used_at", "is", null)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return row?.server_id;
  }

  /**
   * Spends the token and makes `cert` the only certificate its server accepts, in one transaction.
   * The token is marked used by one conditional UPDATE: of two joins racing with one token, exactly
   * one gets the server (the other's certificate is never recorded). Unknown, used or expired:
   * undefined, and nothing changes.
   */
  async spendEnrollment(
    tokenHash: string,
    now: string,
    cert: NodeCertificateRow,
  ): Promise<string | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable("node_enrollments")
        .set({ used_at: now })
        .where("token_hash", "=", tokenHash)
        .where("used_at", "is", null)
        .where("expires_at", ">", now)
        .returning("server_id")
        .executeTakeFirst();
      if (row === undefined) return undefined;
      await this.writeOnlyCertificate(trx, row.server_id, cert, now);
      return row.server_id;
    });
  }

  /** Earlier join strings of a server stop working when a new one is made. */
  async deleteOpenEnrollments(serverId: string): Promise<void> {
    await this.db
      .deleteFrom("node_enrollments")
      .where("server_id", "=", serverId)
      .where("used_at", "is", null)
      .execute();
  }

  async listCertificates(serverId: string): Promise<NodeCertificateRow[]> {
    const rows = await this.db
      .selectFrom("node_certificates")
      .select(["fingerprint", "serial", "state", "not_after"])
      .where("server_id", "=", serverId)
      .orderBy("created_at")
      .execute();
    return rows.map((row) => ({
      fingerprint: row.fingerprint,
      serial: row.serial,
      state: row.state === "pending" ? "pending" : "current",
      notAfter: read.timestamp(row.not_after),
    }));
  }

  /** A (re-)enrollment: every certificate the server accepted before is dropped (revoked). */
  private async writeOnlyCertificate(
    trx: Kysely<Database>,
    serverId: string,
    cert: NodeCertificateRow,
    now: string,
  ): Promise<void> {
    await trx.deleteFrom("node_certificates").where("server_id", "=", serverId).execute();
    await trx
      .insertInto("node_certificates")
      .values({
        fingerprint: cert.fingerprint,
        server_id: serverId,
        serial: cert.serial,
        state: cert.state,
        not_after: cert.notAfter,
        created_at: now,
      })
      .execute();
  }

  async addPendingCertificate(serverId: string, cert: NodeCertificateRow, now: string): Promise<void> {
    await this.db
      .insertInto("node_certificates")
      .values({
        fingerprint: cert.fingerprint,
        server_id: serverId,
        serial: cert.serial,
        state: "pending",
        not_after: cert.notAfter,
        created_at: now,
      })
      .execute();
  }

  /** The renewed certificate is in use: it becomes the only one accepted. */
  async promoteCertificate(serverId: string, fingerprint: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .deleteFrom("node_certificates")
        .where("server_id", "=", serverId)
        .where("fingerprint", "!=", fingerprint)
        .execute();
      await trx
        .updateTable("node_certificates")
        .set({ state: "current" })
        .where("fingerprint", "=", fingerprint)
        .execute();
    });
  }
}

/** What the online listings need of the access table: who an email is on a server, a user's emails. */
export class NodeAccessLookup {
  constructor(private readonly db: Kysely<Database>) {}

  async usersByEmail(serverId: string, emails: readonly string[]): Promise<Map<string, string>> {
    if (emails.length === 0) return new Map();
    const rows = await this.db
      .selectFrom("user_access")
      .select(["user_id", "proxy_user_id"])
      .where("server_id", "=", serverId)
      .where("proxy_user_id", "in", emails.slice(0, 5000))
      .execute();
    return new Map(rows.map((row) => [row.proxy_user_id, row.user_id]));
  }

  async userExists(userId: string): Promise<boolean> {
    const row = await this.db.selectFrom("users").select("id").where("id", "=", userId).executeTakeFirst();
    return row !== undefined;
  }

  /** Every `node` server's id (the fair-use job asks each agent). */
  async nodeServerIds(): Promise<string[]> {
    const rows = await this.db.selectFrom("servers").select("id").where("connection", "=", "node").execute();
    return rows.map((row) => row.id);
  }

  /** The user's proxy ids on `node` servers, by server. */
  async nodeGrantsOf(userId: string): Promise<Map<string, Set<string>>> {
    const rows = await this.db
      .selectFrom("user_access")
      .innerJoin("servers", "servers.id", "user_access.server_id")
      .select(["user_access.server_id", "user_access.proxy_user_id"])
      .where("user_access.user_id", "=", userId)
      .where("servers.connection", "=", "node")
      .execute();
    const out = new Map<string, Set<string>>();
    for (const row of rows) {
      const set = out.get(row.server_id) ?? new Set<string>();
      set.add(row.proxy_user_id);
      out.set(row.server_id, set);
    }
    return out;
  }
}

function toAuthority(row: Selectable<NodeAuthorityTable>): AuthorityRow {
  return {
    caCert: row.ca_cert,
    caKeySealed: row.ca_key_sealed,
    clientCert: row.client_cert,
    clientKeySealed: row.client_key_sealed,
  };
}
