// The queue of removals that could not reach their core (unavailable or timed out): the database row
// is gone, the core may still hold the inbound or user. The reconciler drains it; a later successful
// apply of the same tag makes an entry moot, so it is cleared then.
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";

export type CoreRemoval = {
  id: string;
  server_id: string;
  inbound_tag: string;
  /** null: remove the whole inbound. */
  email: string | null;
  created_at: string;
};

export class RemovalsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async enqueue(serverId: string, tag: string, email: string | null, now: string): Promise<void> {
    await this.db
      .insertInto("core_removals")
      .values({ id: randomUUID(), server_id: serverId, inbound_tag: tag, email, created_at: now })
      .execute();
  }

  async listForServer(serverId: string): Promise<CoreRemoval[]> {
    const rows = await this.db
      .selectFrom("core_removals")
      .selectAll()
      .where("server_id", "=", serverId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({ ...row, created_at: read.timestamp(row.created_at) }));
  }

  /** The inbound was just (re)applied as a whole: no earlier removal under its tag still applies. */
  async clearTag(serverId: string, tag: string): Promise<void> {
    await this.db
      .deleteFrom("core_removals")
      .where("server_id", "=", serverId)
      .where("inbound_tag", "=", tag)
      .execute();
  }

  /** The users were just added to the inbound again: earlier removals of them are moot. */
  async clearUsers(serverId: string, tag: string, emails: readonly string[]): Promise<void> {
    for (const part of chunks(emails)) {
      await this.db
        .deleteFrom("core_removals")
        .where("server_id", "=", serverId)
        .where("inbound_tag", "=", tag)
        .where("email", "in", part)
        .execute();
    }
  }

  async hasAny(serverId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("core_removals")
      .select("id")
      .where("server_id", "=", serverId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Done (or moot): the reconciler drops them. */
  async deleteByIds(ids: readonly string[]): Promise<void> {
    for (const part of chunks(ids))
      await this.db.deleteFrom("core_removals").where("id", "in", part).execute();
  }
}
