// Bearer credentials of admins (session tokens and named API keys), stored hashed. Admin accounts
// themselves are in features/auth/admins.repository.ts.
import type { Kysely, Selectable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { AdminTokensTable, Database } from "../../db/types.ts";

export type StoredToken = {
  id: string;
  adminId: string;
  kind: "session" | "api_key";
  name: string | null;
  /** An API key narrowed to this role; null: the admin's own role. */
  role: string | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
};

/** A token with what authorising a request needs about its admin, read in one query. */
export type TokenWithAdmin = StoredToken & {
  username: string;
  adminRole: string;
  adminDisabled: boolean;
  /** JSON texts of the admin's own-scoped permissions and allowed groups (migration 0031). */
  adminOwnScope: string;
  adminAllowedGroupIds: string | null;
  adminAllowedPlanIds: string | null;
};

export class AuthRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insertToken(token: StoredToken & { tokenHash: string }): Promise<void> {
    await this.db
      .insertInto("admin_tokens")
      .values({
        id: token.id,
        admin_id: token.adminId,
        kind: token.kind,
        name: token.name,
        token_hash: token.tokenHash,
        role: token.role,
        created_at: token.createdAt,
        expires_at: token.expiresAt,
        last_used_at: null,
      })
      .execute();
  }

  async findTokenByHash(tokenHash: string): Promise<TokenWithAdmin | undefined> {
    const row = await this.db
      .selectFrom("admin_tokens as t")
      .innerJoin("admins as a", "a.id", "t.admin_id")
      .selectAll("t")
      .select([
        "a.username",
        "a.role as admin_role",
        "a.is_disabled as admin_disabled",
        "a.own_scope as admin_own_scope",
        "a.allowed_group_ids as admin_allowed_group_ids",
        "a.allowed_plan_ids as admin_allowed_plan_ids",
      ])
      .where("t.token_hash", "=", tokenHash)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      ...toToken(row),
      username: row.username,
      adminRole: row.admin_role,
      adminDisabled: read.bool(row.admin_disabled),
      adminOwnScope: row.admin_own_scope,
      adminAllowedGroupIds: row.admin_allowed_group_ids,
      adminAllowedPlanIds: row.admin_allowed_plan_ids,
    };
  }

  async deleteToken(id: string): Promise<number> {
    const result = await this.db.deleteFrom("admin_tokens").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Ends an admin's sessions, all or all but one (the one changing its own password). */
  async deleteSessionsOf(adminId: string, exceptId?: string): Promise<void> {
    let query = this.db
      .deleteFrom("admin_tokens")
      .where("admin_id", "=", adminId)
      .where("kind", "=", "session");
    if (exceptId !== undefined) query = query.where("id", "<>", exceptId);
    await query.execute();
  }

  /** Ends every session and API key of an admin (password reset, disabled). */
  async deleteTokensOf(adminId: string): Promise<number> {
    const result = await this.db
      .deleteFrom("admin_tokens")
      .where("admin_id", "=", adminId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteExpiredSessions(now: string): Promise<void> {
    await this.db.deleteFrom("admin_tokens").where("expires_at", "<", now).execute();
  }

  async listApiKeys(adminId: string): Promise<StoredToken[]> {
    const rows = await this.db
      .selectFrom("admin_tokens")
      .selectAll()
      .where("admin_id", "=", adminId)
      .where("kind", "=", "api_key")
      .orderBy("created_at")
      .execute();
    return rows.map(toToken);
  }

  async findApiKey(adminId: string, id: string): Promise<StoredToken | undefined> {
    const row = await this.db
      .selectFrom("admin_tokens")
      .selectAll()
      .where("id", "=", id)
      .where("admin_id", "=", adminId)
      .where("kind", "=", "api_key")
      .executeTakeFirst();
    return row && toToken(row);
  }

  async touchToken(id: string, now: string): Promise<void> {
    await this.db.updateTable("admin_tokens").set({ last_used_at: now }).where("id", "=", id).execute();
  }
}

function toToken(row: Selectable<AdminTokensTable>): StoredToken {
  return {
    id: row.id,
    adminId: row.admin_id,
    kind: row.kind,
    name: row.name,
    role: row.role,
    createdAt: read.timestamp(row.created_at),
    expiresAt: read.optionalTimestamp(row.expires_at),
    lastUsedAt: read.optionalTimestamp(row.last_used_at),
  };
}
