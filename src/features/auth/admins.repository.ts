// Admin accounts in SQL: role, disabled flag, password hash, the TOTP second factor and its
// one-time recovery codes. Tokens live in auth.repository.ts.
import type { Kysely, Selectable, Transaction, Updateable } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type { AdminsTable, Database } from "../../db/types.ts";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import { isRole, type Role, readIdList, readOwnScope, type ScopablePermission } from "../../lib/roles.ts";

export type AdminRecord = {
  id: string;
  username: string;
  role: Role;
  isDisabled: boolean;
  passwordHash: string;
  totpSecretSealed: string | null;
  totpEnabledAt: string | null;
  totpLastStep: number | null;
  /** Permissions held for own users only (docs/RESELLERS.md). */
  ownScope: ScopablePermission[];
  maxUsers: number | null;
  maxDataBytes: number | null;
  allowedGroupIds: string[] | null;
  allowedPlanIds: string[] | null;
  createdAt: string;
  updatedAt: string;
};

/** What an admin's users add up to, against their quotas. */
export type OwnedTotals = { users: number; dataBytes: number; unlimitedUsers: number };

export type AdminPatch = Partial<{
  role: Role;
  isDisabled: boolean;
  passwordHash: string;
  totpSecretSealed: string | null;
  totpEnabledAt: string | null;
  totpLastStep: number | null;
  ownScope: ScopablePermission[];
  maxUsers: number | null;
  maxDataBytes: number | null;
  allowedGroupIds: string[] | null;
  allowedPlanIds: string[] | null;
}>;

export class AdminsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async countAdmins(): Promise<number> {
    const row = await this.db
      .selectFrom("admins")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Owners who can sign in: the last one may not be demoted, disabled or deleted. */
  async countActiveOwners(): Promise<number> {
    const row = await this.db
      .selectFrom("admins")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("role", "=", "owner")
      .where("is_disabled", "=", false)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async listAdmins(): Promise<AdminRecord[]> {
    const rows = await this.db.selectFrom("admins").selectAll().orderBy("created_at").orderBy("id").execute();
    return rows.map(toRecord);
  }

  async findAdmin(id: string): Promise<AdminRecord | undefined> {
    const row = await this.db.selectFrom("admins").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toRecord(row);
  }

  async getAdmin(id: string): Promise<AdminRecord> {
    const admin = await this.findAdmin(id);
    if (admin === undefined) throw new NotFoundError("admin", id);
    return admin;
  }

  /** Each admin's users: how many, their data limits' sum, how many have none (one grouped query). */
  async ownedTotals(adminId?: string): Promise<Map<string, OwnedTotals>> {
    let query = this.db
      .selectFrom("users")
      .select((eb) => [
        "owner_admin_id",
        eb.fn.countAll().as("users"),
        eb.fn.count("data_limit_bytes").as("limited"),
        eb.fn.sum("data_limit_bytes").as("bytes"),
      ])
      .where("owner_admin_id", "is not", null)
      .groupBy("owner_admin_id");
    if (adminId !== undefined) query = query.where("owner_admin_id", "=", adminId);
    const rows = await query.execute();
    const out = new Map<string, OwnedTotals>();
    for (const row of rows) {
      const users = Number(row.users);
      out.set(String(row.owner_admin_id), {
        users,
        dataBytes: Number(row.bytes ?? 0),
        unlimitedUsers: users - Number(row.limited),
      });
    }
    return out;
  }

  async findByUsername(username: string): Promise<AdminRecord | undefined> {
    const row = await this.db
      .selectFrom("admins")
      .selectAll()
      .where("username", "=", username)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async insertAdmin(admin: { id: string; username: string; passwordHash: string; role: Role; now: string }) {
    await this.db
      .insertInto("admins")
      .values({
        id: admin.id,
        username: admin.username,
        password_hash: admin.passwordHash,
        role: admin.role,
        is_disabled: false,
        created_at: admin.now,
        updated_at: admin.now,
      })
      .execute();
  }

  async updateAdmin(id: string, patch: AdminPatch, now: string): Promise<void> {
    await this.db.updateTable("admins").set(toSet(patch, now)).where("id", "=", id).execute();
  }

  /**
   * Updates an admin; when the change takes an active owner away (`leavesOwner`), only if another
   * active owner remains, checked and written in one transaction that locks the owner rows
   * (PostgreSQL; SQLite has one writer), so two owners demoting each other cannot leave none.
   */
  async updateKeepingAnOwner(id: string, patch: AdminPatch, now: string, leavesOwner: boolean) {
    await this.db.transaction().execute(async (trx) => {
      if (leavesOwner) await this.#assertAnotherOwner(trx, id);
      await trx.updateTable("admins").set(toSet(patch, now)).where("id", "=", id).execute();
    });
  }

  async deleteKeepingAnOwner(id: string, leavesOwner: boolean): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      if (leavesOwner) await this.#assertAnotherOwner(trx, id);
      const result = await trx.deleteFrom("admins").where("id", "=", id).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) throw new NotFoundError("admin", id);
    });
  }

  async #assertAnotherOwner(trx: Transaction<Database>, leavingId: string): Promise<void> {
    let query = trx
      .selectFrom("admins")
      .select("id")
      .where("role", "=", "owner")
      .where("is_disabled", "=", false);
    if (this.dialect === "postgres") query = query.forUpdate();
    const owners = await query.execute();
    if (!owners.some((owner) => owner.id !== leavingId)) {
      throw new ConflictError("the last active owner cannot be demoted, disabled or deleted", "last_owner");
    }
  }

  /** Records `step` as used unless it (or a later one) was: one UPDATE, so two racing logins cannot both use a code. */
  async acceptTotpStep(id: string, step: number): Promise<boolean> {
    const result = await this.db
      .updateTable("admins")
      .set({ totp_last_step: step })
      .where("id", "=", id)
      .where((eb) => eb.or([eb("totp_last_step", "is", null), eb("totp_last_step", "<", step)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async replaceRecoveryCodes(adminId: string, rows: { id: string; hash: string }[], now: string) {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom("admin_recovery_codes").where("admin_id", "=", adminId).execute();
      if (rows.length === 0) return;
      await trx
        .insertInto("admin_recovery_codes")
        .values(
          rows.map((r) => ({
            id: r.id,
            admin_id: adminId,
            code_hash: r.hash,
            created_at: now,
            used_at: null,
          })),
        )
        .execute();
    });
  }

  /** Marks an unused code of this admin used; false when there is none (unknown or used already). */
  async spendRecoveryCode(adminId: string, hash: string, now: string): Promise<boolean> {
    const result = await this.db
      .updateTable("admin_recovery_codes")
      .set({ used_at: now })
      .where("admin_id", "=", adminId)
      .where("code_hash", "=", hash)
      .where("used_at", "is", null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async countUnusedRecoveryCodes(adminId: string): Promise<number> {
    const row = await this.db
      .selectFrom("admin_recovery_codes")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("admin_id", "=", adminId)
      .where("used_at", "is", null)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }
}

function toSet(patch: AdminPatch, now: string): Updateable<AdminsTable> {
  const set: Updateable<AdminsTable> = { updated_at: now };
  if (patch.role !== undefined) set.role = patch.role;
  if (patch.isDisabled !== undefined) set.is_disabled = patch.isDisabled;
  if (patch.passwordHash !== undefined) set.password_hash = patch.passwordHash;
  if (patch.totpSecretSealed !== undefined) set.totp_secret_sealed = patch.totpSecretSealed;
  if (patch.totpEnabledAt !== undefined) set.totp_enabled_at = patch.totpEnabledAt;
  if (patch.totpLastStep !== undefined) set.totp_last_step = patch.totpLastStep;
  if (patch.ownScope !== undefined) set.own_scope = JSON.stringify(patch.ownScope);
  if (patch.maxUsers !== undefined) set.max_users = patch.maxUsers;
  if (patch.maxDataBytes !== undefined) set.max_data_bytes = patch.maxDataBytes;
  if (patch.allowedGroupIds !== undefined) {
    set.allowed_group_ids = patch.allowedGroupIds === null ? null : JSON.stringify(patch.allowedGroupIds);
  }
  if (patch.allowedPlanIds !== undefined) {
    set.allowed_plan_ids = patch.allowedPlanIds === null ? null : JSON.stringify(patch.allowedPlanIds);
  }
  return set;
}

function toRecord(row: Selectable<AdminsTable>): AdminRecord {
  return {
    id: row.id,
    username: row.username,
    role: isRole(row.role) ? row.role : "viewer",
    isDisabled: read.bool(row.is_disabled),
    passwordHash: row.password_hash,
    totpSecretSealed: row.totp_secret_sealed,
    totpEnabledAt: read.optionalTimestamp(row.totp_enabled_at),
    totpLastStep: read.optionalBigint(row.totp_last_step),
    ownScope: readOwnScope(row.own_scope),
    maxUsers: row.max_users,
    maxDataBytes: read.optionalBigint(row.max_data_bytes),
    allowedGroupIds: readIdList(row.allowed_group_ids),
    allowedPlanIds: readIdList(row.allowed_plan_ids),
    createdAt: read.timestamp(row.created_at),
    updatedAt: read.timestamp(row.updated_at),
  };
}
