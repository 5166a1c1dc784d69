// Per-admin quotas over the users they own (issue 49 item 3, docs/RESELLERS.md): how many users, and
// the sum of their data limits (an unlimited user counts as more than any finite quota). A write that
// may grow an admin's users runs inside `withinQuotas`: the owners' admin rows are locked first
// (PostgreSQL FOR UPDATE; SQLite has one writer), their totals read, the write done, the totals read
// again, all in one transaction. A total that grew past its quota rolls the write back, so 50
// concurrent creates cannot overshoot: check and act are one step. A total already over a quota that
// was lowered does not block writes that do not grow it.
import type { Kysely, Transaction } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import { QuotaExceededError } from "../../lib/errors.ts";

/** The transaction a write under quotas runs in (handed to the repository methods it calls). */
export type QuotaTx = Transaction<Database>;
type Totals = { users: number; dataBytes: number; unlimited: number };
type Quota = { id: string; username: string; maxUsers: number | null; maxDataBytes: number | null };

export class QuotasRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** Runs `work` in a transaction under the quotas of `ownerIds` (null and duplicates ignored). */
  async withinQuotas<T>(
    ownerIds: readonly (string | null | undefined)[],
    work: (trx: Transaction<Database>) => Promise<T>,
  ): Promise<T> {
    const ids = [...new Set(ownerIds.filter((id): id is string => typeof id === "string"))].sort();
    return this.db.transaction().execute(async (trx) => {
      const quotas = await this.#lockQuotas(trx, ids);
      const before = new Map<string, Totals>();
      for (const quota of quotas) before.set(quota.id, await totalsOf(trx, quota.id));
      const result = await work(trx);
      for (const quota of quotas) {
        const was = before.get(quota.id) as Totals;
        check(quota, was, await totalsOf(trx, quota.id));
      }
      return result;
    });
  }

  /** The owners that have a quota, their rows locked in id order (no deadlock between two writers). */
  async #lockQuotas(trx: Transaction<Database>, ids: string[]): Promise<Quota[]> {
    if (ids.length === 0) return [];
    let query = trx
      .selectFrom("admins")
      .select(["id", "username", "max_users", "max_data_bytes"])
      .where("id", "in", ids)
      .orderBy("id");
    if (this.dialect === "postgres") query = query.forUpdate();
    const rows = await query.execute();
    return rows
      .map((row) => ({
        id: row.id,
        username: row.username,
        maxUsers: row.max_users,
        maxDataBytes: read.optionalBigint(row.max_data_bytes),
      }))
      .filter((quota) => quota.maxUsers !== null || quota.maxDataBytes !== null);
  }
}

async function totalsOf(trx: Transaction<Database>, ownerId: string): Promise<Totals> {
  const row = await trx
    .selectFrom("users")
    .select((eb) => [
      eb.fn.countAll().as("users"),
      eb.fn.count("data_limit_bytes").as("limited"),
      eb.fn.sum("data_limit_bytes").as("bytes"),
    ])
    .where("owner_admin_id", "=", ownerId)
    .executeTakeFirst();
  const users = Number(row?.users ?? 0);
  return { users, unlimited: users - Number(row?.limited ?? 0), dataBytes: Number(row?.bytes ?? 0) };
}

/** Refuses totals that grew past a quota. */
function check(quota: Quota, was: Totals, now: Totals): void {
  if (quota.maxUsers !== null && now.users > quota.maxUsers && now.users > was.users) {
    throw new QuotaExceededError(
      "max_users",
      `admin ${quota.username} may own at most ${quota.maxUsers} users; this would make ${now.users}`,
    );
  }
  if (quota.maxDataBytes === null) return;
  if (now.unlimited > 0 && now.unlimited > was.unlimited) {
    throw new QuotaExceededError(
      "max_data_bytes",
      `admin ${quota.username} grants at most ${quota.maxDataBytes} bytes in all: a user without a data limit would exceed it`,
    );
  }
  if (now.dataBytes > quota.maxDataBytes && now.dataBytes > was.dataBytes) {
    throw new QuotaExceededError(
      "max_data_bytes",
      `admin ${quota.username} grants at most ${quota.maxDataBytes} bytes in all; this would make ${now.dataBytes}`,
    );
  }
}
