// A user's devices (migration 0032): one row per (user, HWID). admit() is the one write on /sub: it
// decides and records in one transaction, so concurrent first fetches cannot pass the limit together.
import type { Kysely } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import type { DeviceHeaders } from "./hwid.ts";

export type DeviceRecord = {
  id: string;
  hwid: string;
  app: string | null;
  os: string | null;
  os_version: string | null;
  model: string | null;
  first_seen_at: string;
  last_seen_at: string;
};

/** How a fetch was judged: a known device (seen again), a new one (added), or refused (limit reached). */
export type Admission =
  | { outcome: "known" | "added"; active: number; limit: number }
  | { outcome: "refused"; active: number; limit: number }
  | { outcome: "unlimited" }
  | { outcome: "no_user" };

export class DevicesRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Records the device's fetch if the user may have it: a device already known is seen again (its
   * app, OS and model as sent now); a new one is added only while the user has fewer devices than
   * their limit (users.device_limit, else `defaultLimit`; 0 unlimited). The user's row is locked
   * first (PostgreSQL; SQLite has one writer), so two first fetches of one user are decided one after
   * the other and never both take the last place.
   */
  async admit(
    userId: string,
    device: DeviceHeaders & { hwid: string },
    defaultLimit: number,
    id: string,
    now: string,
  ): Promise<Admission> {
    return await this.db.transaction().execute(async (trx) => {
      let userQuery = trx.selectFrom("users").select("device_limit").where("id", "=", userId);
      if (this.dialect === "postgres") userQuery = userQuery.forUpdate();
      const user = await userQuery.executeTakeFirst();
      if (user === undefined) return { outcome: "no_user" } as const;
      const limit = user.device_limit ?? defaultLimit;
      const seen = {
        app: device.app,
        os: device.os,
        os_version: device.osVersion,
        model: device.model,
        last_seen_at: now,
      };
      const known = await trx
        .updateTable("user_devices")
        .set(seen)
        .where("user_id", "=", userId)
        .where("hwid", "=", device.hwid)
        .executeTakeFirst();
      if (limit === 0) {
        if (Number(known.numUpdatedRows) === 0) {
          await trx
            .insertInto("user_devices")
            .values({ id, user_id: userId, hwid: device.hwid, first_seen_at: now, ...seen })
            .execute();
        }
        return { outcome: "unlimited" } as const;
      }
      const active = await this.#count(trx, userId);
      if (Number(known.numUpdatedRows) > 0) return { outcome: "known", active, limit } as const;
      if (active >= limit) return { outcome: "refused", active, limit } as const;
      await trx
        .insertInto("user_devices")
        .values({ id, user_id: userId, hwid: device.hwid, first_seen_at: now, ...seen })
        .execute();
      return { outcome: "added", active: active + 1, limit } as const;
    });
  }

  async #count(db: Kysely<Database>, userId: string): Promise<number> {
    const row = await db
      .selectFrom("user_devices")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("user_id", "=", userId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The user's device_limit (null: the default), or undefined when there is no such user. */
  async findLimit(userId: string): Promise<{ device_limit: number | null } | undefined> {
    return await this.db
      .selectFrom("users")
      .select("device_limit")
      .where("id", "=", userId)
      .executeTakeFirst();
  }

  /** The user's devices, most recently seen first. */
  async listDevices(userId: string): Promise<DeviceRecord[]> {
    const rows = await this.db
      .selectFrom("user_devices")
      .select(["id", "hwid", "app", "os", "os_version", "model", "first_seen_at", "last_seen_at"])
      .where("user_id", "=", userId)
      .orderBy("last_seen_at", "desc")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({
      ...row,
      first_seen_at: read.timestamp(row.first_seen_at),
      last_seen_at: read.timestamp(row.last_seen_at),
    }));
  }

  /** Deletes one of the user's devices; what was deleted, or undefined when the user has no such device. */
  async deleteDevice(userId: string, deviceId: string): Promise<DeviceRecord | undefined> {
    const rows = await this.db
      .deleteFrom("user_devices")
      .where("user_id", "=", userId)
      .where("id", "=", deviceId)
      .returning(["id", "hwid", "app", "os", "os_version", "model", "first_seen_at", "last_seen_at"])
      .execute();
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      ...row,
      first_seen_at: read.timestamp(row.first_seen_at),
      last_seen_at: read.timestamp(row.last_seen_at),
    };
  }
}
