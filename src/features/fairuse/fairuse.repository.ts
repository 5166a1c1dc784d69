// The fair-use tables (migration 0027): the settings row, the decision's state per user, the block
// history, and users.fair_use_blocked_until (a blocked user is not admitted to cores:
// access.repository.ts; the trigger of migration 0027 marks their grants pending).
import type { Kysely } from "kysely";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { chunks } from "../../lib/limiter.ts";
import type { FairUseState } from "./decision.ts";

export type FairUseUserRow = {
  id: string;
  name: string;
  ip_limit: number | null;
  blocked_until_ms: number | null;
  state: FairUseState | null;
};

export type BlockRecord = {
  id: string;
  user_id: string;
  started_at: string;
  until: string;
  ended_at: string | null;
  end_reason: string | null;
  strike: number;
  address_count: number;
  ip_limit: number;
  addresses: string[];
};

const ms = (value: string | Date | null): number | null =>
  value === null ? null : Date.parse(read.timestamp(value));
const iso = (value: number | null): string | null => (value === null ? null : new Date(value).toISOString());

export class FairUseRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async readSettings(): Promise<Record<string, unknown> | undefined> {
    const row = await this.db
      .selectFrom("fair_use_settings")
      .select("data")
      .where("id", "=", 1)
      .executeTakeFirst();
    return row === undefined ? undefined : (JSON.parse(row.data) as Record<string, unknown>);
  }

  async writeSettings(data: Record<string, unknown>, now: string): Promise<void> {
    const text = JSON.stringify(data);
    await this.db
      .insertInto("fair_use_settings")
      .values({ id: 1, data: text, updated_at: now })
      .onConflict((oc) => oc.column("id").doUpdateSet({ data: text, updated_at: now }))
      .execute();
  }

  /** The users a tick judges: those seen (ids given) and every user with a stored state or a block. */
  async usersToJudge(seenIds: readonly string[]): Promise<FairUseUserRow[]> {
    const out = new Map<string, FairUseUserRow>();
    const select = () =>
      this.db
        .selectFrom("users as u")
        .leftJoin("fair_use_state as s", "s.user_id", "u.id")
        .select([
          "u.id",
          "u.name",
          "u.ip_limit",
          "u.fair_use_blocked_until",
          "s.user_id as state_user",
          "s.warned_at",
          "s.strikes",
          "s.last_release_at",
          "s.counted_from",
        ]);
    type Row = Awaited<ReturnType<ReturnType<typeof select>["execute"]>>[number];
    const add = (row: Row) => {
      const blocked = ms(row.fair_use_blocked_until);
      out.set(row.id, {
        id: row.id,
        name: row.name,
        ip_limit: row.ip_limit,
        blocked_until_ms: blocked,
        state:
          row.state_user === null
            ? null
            : {
                blockedUntilMs: blocked,
                warnedAtMs: ms(row.warned_at),
                strikes: row.strikes ?? 0,
                lastReleaseMs: ms(row.last_release_at),
                countedFromMs: ms(row.counted_from) ?? 0,
              },
      });
    };
    for (const part of chunks([...new Set(seenIds)], 500)) {
      for (const row of await select().where("u.id", "in", part).execute()) add(row);
    }
    // Two statements, each through an index (one OR across both tables read every user: migration 0038).
    const blocked = await select().where("u.fair_use_blocked_until", "is not", null).execute();
    for (const row of blocked) add(row);
    const warned = await select()
      .where("u.id", "in", (eb) =>
        eb.selectFrom("fair_use_state").select("user_id").where("warned_at", "is not", null),
      )
      .execute();
    for (const row of warned) add(row);
    return [...out.values()];
  }

  /** Writes a user's new state; a block or release also moves users.fair_use_blocked_until and the history. */
  async save(
    userId: string,
    state: FairUseState,
    change: {
      block?: Omit<BlockRecord, "ended_at" | "end_reason">;
      release?: { at: string; reason: string };
    },
  ): Promise<boolean> {
    return await this.db.transaction().execute(async (trx) => {
      if (change.block !== undefined) {
        const block = change.block;
        const moved = await trx
          .updateTable("users")
          .set({ fair_use_blocked_until: block.until })
          .where("id", "=", userId)
          .where("fair_use_blocked_until", "is", null)
          .executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 0) return false;
        await trx
          .insertInto("fair_use_blocks")
          .values({ ...block, addresses: JSON.stringify(block.addresses) })
          .execute();
      }
      if (change.release !== undefined) {
        const moved = await trx
          .updateTable("users")
          .set({ fair_use_blocked_until: null })
          .where("id", "=", userId)
          .where("fair_use_blocked_until", "is not", null)
          .executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 0) return false;
        await trx
          .updateTable("fair_use_blocks")
          .set({ ended_at: change.release.at, end_reason: change.release.reason })
          .where("user_id", "=", userId)
          .where("ended_at", "is", null)
          .execute();
      }
      const values = {
        warned_at: iso(state.warnedAtMs),
        strikes: state.strikes,
        last_release_at: iso(state.lastReleaseMs),
        counted_from: state.countedFromMs === 0 ? null : iso(state.countedFromMs),
      };
      await trx
        .insertInto("fair_use_state")
        .values({ user_id: userId, ...values })
        .onConflict((oc) => oc.column("user_id").doUpdateSet(values))
        .execute();
      return true;
    });
  }

  async blocksOf(userId: string, limit = 50): Promise<BlockRecord[]> {
    const rows = await this.db
      .selectFrom("fair_use_blocks")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("started_at", "desc")
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      user_id: row.user_id,
      started_at: read.timestamp(row.started_at),
      until: read.timestamp(row.until),
      ended_at: read.optionalTimestamp(row.ended_at),
      end_reason: row.end_reason,
      strike: row.strike,
      address_count: row.address_count,
      ip_limit: row.ip_limit,
      addresses: JSON.parse(row.addresses) as string[],
    }));
  }

  async userLimit(
    userId: string,
  ): Promise<{ ip_limit: number | null; blocked_until: string | null } | undefined> {
    const row = await this.db
      .selectFrom("users")
      .select(["ip_limit", "fair_use_blocked_until"])
      .where("id", "=", userId)
      .executeTakeFirst();
    return row === undefined
      ? undefined
      : { ip_limit: row.ip_limit, blocked_until: read.optionalTimestamp(row.fair_use_blocked_until) };
  }
}
