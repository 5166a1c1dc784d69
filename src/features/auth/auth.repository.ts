// Admin accounts and their bearer credentials (session tokens and named API keys), stored hashed.
import type { Kysely, Selectable } from "kysely";
import { read } from "../../db/dialect.ts";
import type { AdminTokensTable, Database } from "../../db/types.ts";

export type Admin = { id: string; username: string; passwordHash: string };

export type StoredToken = {
  id: string;
  adminId: string;
  kind: "session" | "api_key";
  name: string | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
};

export class AuthRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async countAdmins(): Promise<number> {
    const row = await this.db
      .selectFrom("admins")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async findAdminByUsername(username: string): Promise<Admin | undefined> {
    const row = await this.db
      .selectFrom("admins")
      .select(["id", "username", "password_hash"])
      .where("username", "=", username)
      .executeTakeFirst();
    return row && { id: row.id, username: row.username, passwordHash: row.password_hash };
  }

  async insertAdmin(admin: {
    id: string;
    username: string;
    passwordHash: string;
    now: string;
  }): Promise<void> {
    await this.db
      .insertInto("admins")
      .values({
        id: admin.id,
        username: admin.username,
        password_hash: admin.passwordHash,
        created_at: admin.now,
        updated_at: admin.now,
      })
      .execute();
  }

  async updatePassword(adminId: string, passwordHash: string, now: string): Promise<void> {
    await this.db
      .updateTable("admins")
      .set({ password_hash: passwordHash, updated_at: now })
      .where("id", "=", adminId)
      .execute();
  }

  async insertToken(token: StoredToken & { tokenHash: string }): Promise<void> {
    await this.db
      .insertInto("admin_tokens")
      .values({
        id: token.id,
        admin_id: token.adminId,
        kind: token.kind,
        name: token.name,
        token_hash: token.tokenHash,
        created_at: token.createdAt,
        expires_at: token.expiresAt,
        last_used_at: null,
      })
      .execute();
  }

  async findTokenByHash(tokenHash: string): Promise<StoredToken | undefined> {
    const row = await this.db
      .selectFrom("admin_tokens")
      .selectAll()
      .where("token_hash", "=", tokenHash)
      .executeTakeFirst();
    return row && toToken(row);
  }

  async deleteToken(id: string): Promise<number> {
    const result = await this.db.deleteFrom("admin_tokens").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteSessionsOf(adminId: string): Promise<void> {
    await this.db
      .deleteFrom("admin_tokens")
      .where("admin_id", "=", adminId)
      .where("kind", "=", "session")
      .execute();
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
    createdAt: read.timestamp(row.created_at),
    expiresAt: read.optionalTimestamp(row.expires_at),
    lastUsedAt: read.optionalTimestamp(row.last_used_at),
  };
}
