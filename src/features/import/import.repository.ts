// The writes of an import (issue 51), batch by batch: each batch (users, their grants and their old
// URL keys) is one transaction, every row keyed so that a second insert of it does nothing. A run
// killed between batches keeps the batches it committed; run again, it inserts only the rest.
import { type Insertable, type Kysely, sql } from "kysely";
import { type DialectName, ROWS_PER_INSERT, read } from "../../db/dialect.ts";
import type { Database, ImportLinksTable, UserAccessTable, UsersTable } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";

export type ImportUserRow = Insertable<UsersTable>;
export type ImportGrantRow = Insertable<UserAccessTable>;
export type ImportLinkRow = Insertable<ImportLinksTable>;

export type ImportBatch = { users: ImportUserRow[]; grants: ImportGrantRow[]; links: ImportLinkRow[] };

export type BatchResult = { users: number; grants: number; links: number };

export class ImportRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Runs `work` with SQLite's page cache raised to BULK_CACHE_KIB, then puts the connection's own
   * size back. With the default (2 MB) a large import keeps reading the pages of the users' and
   * grants' indexes again from the file (docs/BENCHMARKS.md, Import). PostgreSQL: just `work`.
   */
  async withBulkCache<T>(work: () => Promise<T>): Promise<T> {
    if (this.dialect !== "sqlite") return work();
    const { rows } = await sql<{ cache_size: number }>`PRAGMA cache_size`.execute(this.db);
    const previous = Number(rows[0]?.cache_size ?? -2000);
    await sql`PRAGMA cache_size = ${sql.lit(-BULK_CACHE_KIB)}`.execute(this.db);
    try {
      return await work();
    } finally {
      await sql`PRAGMA cache_size = ${sql.lit(previous)}`.execute(this.db);
    }
  }

  /** Inserts what is not there yet (by id, or by the grant's and link's unique keys); the counts inserted. */
  async insertBatch(batch: ImportBatch): Promise<BatchResult> {
    return this.db.transaction().execute(async (trx) => {
      // The import is resumable and a second run inserts only what is missing, so a batch lost to
      // a crash of the database's machine right after its commit costs nothing: PostgreSQL need not
      // wait for its WAL to reach the disk before the next batch.
      if (this.dialect === "postgres") await sql`SET LOCAL synchronous_commit = off`.execute(trx);
      const result: BatchResult = { users: 0, grants: 0, links: 0 };
      for (const part of chunks(batch.users, ROWS_PER_INSERT / 2)) {
        const rows = await trx
          .insertInto("users")
          .values([...part])
          .onConflict((c) => c.column("id").doNothing())
          .returning("id")
          .execute();
        result.users += rows.length;
      }
      for (const part of chunks(batch.grants, ROWS_PER_INSERT)) {
        const rows = await trx
          .insertInto("user_access")
          .values([...part])
          .onConflict((c) => c.doNothing())
          .returning("id")
          .execute();
        result.grants += rows.length;
      }
      for (const part of chunks(batch.links, ROWS_PER_INSERT)) {
        const rows = await trx
          .insertInto("import_links")
          .values([...part])
          .onConflict((c) => c.columns(["source", "key"]).doNothing())
          .returning("key")
          .execute();
        result.links += rows.length;
      }
      return result;
    });
  }

  /** The users among these ids that exist (imported before, by this or an earlier run). */
  async existingUserIds(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of chunks(ids, 5000)) {
      const rows = await this.db
        .selectFrom("users")
        .select("id")
        .where("id", "in", [...part])
        .execute();
      for (const row of rows) found.add(row.id);
    }
    return found;
  }

  /** The credentials on an inbound, with whose grant they are. */
  async credentialsOf(inboundId: string): Promise<Map<string, string>> {
    const rows = await this.db
      .selectFrom("user_access")
      .select(["credential", "user_id"])
      .where("server_inbound_id", "=", inboundId)
      .execute();
    return new Map(rows.map((row) => [row.credential, row.user_id]));
  }

  async adminNames(): Promise<Set<string>> {
    const rows = await this.db.selectFrom("admins").select("username").execute();
    return new Set(rows.map((row) => row.username.toLowerCase()));
  }

  /** An admin who cannot sign in until an owner sets a password (`portcullis admin reset-password`). */
  async insertAdmin(
    id: string,
    username: string,
    role: string,
    createdAt: string,
    now: string,
  ): Promise<boolean> {
    const rows = await this.db
      .insertInto("admins")
      .values({
        id,
        username,
        password_hash: NO_PASSWORD,
        role,
        is_disabled: false,
        created_at: createdAt,
        updated_at: now,
      })
      .onConflict((c) => c.doNothing())
      .returning("id")
      .execute();
    return rows.length > 0;
  }

  /** Stores the peer's signing secret (sealed) once; later runs leave it. */
  async saveSecret(source: string, sealed: string, now: string): Promise<void> {
    await this.db
      .insertInto("import_secrets")
      .values({ source, secret_sealed: sealed, created_at: now })
      .onConflict((c) => c.column("source").doNothing())
      .execute();
  }

  async sealedSecret(source: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("import_secrets")
      .select("secret_sealed")
      .where("source", "=", source)
      .executeTakeFirst();
    return row?.secret_sealed;
  }

  /** The user an old URL names: their current sub_token, whether Portcullis revoked it, when the peer's tokens stopped counting. */
  async findLink(
    source: string,
    key: string,
  ): Promise<
    { user_id: string; sub_token: string; revoked_here: boolean; revoked_at: string | null } | undefined
  > {
    const row = await this.db
      .selectFrom("import_links as l")
      .innerJoin("users as u", "u.id", "l.user_id")
      .select(["l.user_id", "l.revoked_at", "u.sub_token", "u.sub_by_id_revoked_at"])
      .where("l.source", "=", source)
      .where("l.key", "=", key)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      user_id: row.user_id,
      sub_token: row.sub_token,
      revoked_here: row.sub_by_id_revoked_at !== null,
      revoked_at: row.revoked_at === null ? null : read.timestamp(row.revoked_at),
    };
  }

  /** What Marzban's /sub/{token}/info shows of a user. */
  async userInfo(id: string) {
    return this.db
      .selectFrom("users")
      .select([
        "name",
        "status",
        "used_bytes",
        "lifetime_used_bytes",
        "data_limit_bytes",
        "data_limit_reset",
        "expire_at",
        "on_hold_duration_seconds",
        "on_hold_timeout_at",
        "created_at",
        "online_at",
        "sub_updated_at",
      ])
      .where("id", "=", id)
      .executeTakeFirst();
  }
}

/** 128 MiB: the page cache an import runs with on SQLite (see withBulkCache). */
const BULK_CACHE_KIB = 131_072;

/** Not a scrypt record, so lib/password.ts never accepts any password for it. */
export const NO_PASSWORD = "imported:no-password";
