// Admin accounts as owners manage them: create with a role, change role, disable, reset password or
// second factor, see and revoke their API keys, delete. A reset password or a disable ends the
// admin's sessions and API keys for good. There is always an owner who can sign in: the last one cannot be demoted,
// disabled or deleted, and an admin cannot disable or delete themself (a slip would lock them out).
import { ConflictError } from "../../lib/errors.ts";
import type { Principal } from "../../lib/http.ts";
import { type Role, SCOPABLE_PERMISSIONS, type ScopablePermission } from "../../lib/roles.ts";
import type { AdminPatch, AdminRecord, AdminsRepository, OwnedTotals } from "../auth/admins.repository.ts";
import type { ApiKey, AuthService } from "../auth/auth.service.ts";
import type { AdminCreate, AdminUpdate, AdminView, Scopes } from "./admins.schemas.ts";

/** Disables every user an admin owns (the users feature's bulk action, wired in deps.ts). */
export interface OwnedUsersSwitch {
  disableOwnedBy(adminId: string): Promise<number>;
}

const NO_USERS: OwnedTotals = { users: 0, dataBytes: 0, unlimitedUsers: 0 };

export class AdminsService {
  constructor(
    private readonly admins: AdminsRepository,
    private readonly auth: AuthService,
    private readonly ownedUsers: OwnedUsersSwitch = { disableOwnedBy: async () => 0 },
  ) {}

  async list(): Promise<AdminView[]> {
    const totals = await this.admins.ownedTotals();
    return (await this.admins.listAdmins()).map((admin) => toView(admin, totals.get(admin.id)));
  }

  async get(id: string): Promise<AdminView> {
    const admin = await this.admins.getAdmin(id);
    return toView(admin, (await this.admins.ownedTotals(id)).get(id));
  }

  async create(input: AdminCreate): Promise<AdminView> {
    const ownScope = ownScopeOf(input.scopes, []);
    checkOwnerScope(input.role, ownScope);
    const admin = await this.auth.createAdmin(input.username, input.password, input.role);
    const patch = quotaPatch(input, ownScope);
    if (Object.keys(patch).length > 0) {
      await this.admins.updateAdmin(admin.id, patch, new Date().toISOString());
    }
    return this.get(admin.id);
  }

  async update(actor: Principal, id: string, input: AdminUpdate): Promise<AdminView> {
    const current = await this.admins.getAdmin(id);
    if (input.is_disabled === true && id === actor.adminId) {
      throw new ConflictError("you cannot disable yourself", "cannot_disable_self");
    }
    if ((input.password !== undefined || input.reset_totp === true) && id === actor.adminId) {
      // Your own credentials change only with proof you hold them (features/auth/own-credentials.ts).
      throw new ConflictError(
        "change your own password at POST /api/auth/password and turn off your own second " +
          "factor at POST /api/auth/totp/disable",
        "cannot_reset_self",
      );
    }
    const losesOwner =
      current.role === "owner" &&
      ((input.role !== undefined && input.role !== "owner") || input.is_disabled === true);
    const ownScope = ownScopeOf(input.scopes, current.ownScope);
    checkOwnerScope(input.role ?? current.role, ownScope);
    const patch: AdminPatch = {
      ...(input.role === undefined ? {} : { role: input.role }),
      ...(input.is_disabled === undefined ? {} : { isDisabled: input.is_disabled }),
      ...quotaPatch(input, input.scopes === undefined ? undefined : ownScope),
    };
    await this.admins.updateKeepingAnOwner(id, patch, new Date().toISOString(), losesOwner);
    if (input.is_disabled === true) await this.auth.revokeTokens(id);
    if (input.is_disabled === true && input.disable_users === true) {
      await this.ownedUsers.disableOwnedBy(id);
    }
    if (input.password !== undefined) await this.auth.setPassword(id, input.password);
    if (input.reset_totp === true) await this.auth.resetTotp(id);
    return this.get(id);
  }

  /** Any admin's API keys, for an owner to see (secrets are never shown again). */
  async listApiKeys(id: string): Promise<ApiKey[]> {
    await this.admins.getAdmin(id);
    return this.auth.listApiKeys(id);
  }

  async deleteApiKey(id: string, keyId: string): Promise<void> {
    await this.admins.getAdmin(id);
    await this.auth.deleteApiKey(id, keyId);
  }

  async delete(actor: Principal, id: string): Promise<void> {
    const current = await this.admins.getAdmin(id);
    if (id === actor.adminId) throw new ConflictError("you cannot delete yourself", "cannot_delete_self");
    await this.admins.deleteKeepingAnOwner(id, current.role === "owner" && !current.isDisabled);
  }
}

/** The own-scoped permissions after applying `scopes` (omitted keys keep what `current` says). */
function ownScopeOf(
  scopes: Scopes | undefined,
  current: readonly ScopablePermission[],
): ScopablePermission[] {
  if (scopes === undefined) return [...current];
  return SCOPABLE_PERMISSIONS.filter((permission) => {
    const scope = scopes[permission];
    return scope === undefined ? current.includes(permission) : scope === "own";
  });
}

/** An owner manages admins, settings and the audit log over everyone: their scope is always all. */
function checkOwnerScope(role: Role, ownScope: readonly ScopablePermission[]): void {
  if (role === "owner" && ownScope.length > 0) {
    throw new ConflictError(
      "an owner's scopes are all: give the admin another role first",
      "owner_scope_all",
    );
  }
}

function quotaPatch(
  input: Pick<AdminUpdate, "max_users" | "max_data_bytes" | "allowed_group_ids" | "allowed_plan_ids">,
  ownScope: ScopablePermission[] | undefined,
): AdminPatch {
  return {
    ...(ownScope === undefined ? {} : { ownScope }),
    ...(input.max_users === undefined ? {} : { maxUsers: input.max_users }),
    ...(input.max_data_bytes === undefined ? {} : { maxDataBytes: input.max_data_bytes }),
    ...(input.allowed_group_ids === undefined
      ? {}
      : { allowedGroupIds: input.allowed_group_ids?.map((id) => id.toLowerCase()) ?? null }),
    ...(input.allowed_plan_ids === undefined
      ? {}
      : { allowedPlanIds: input.allowed_plan_ids?.map((id) => id.toLowerCase()) ?? null }),
  };
}

function toView(admin: AdminRecord, owned: OwnedTotals = NO_USERS): AdminView {
  const scope = (permission: ScopablePermission) => (admin.ownScope.includes(permission) ? "own" : "all");
  return {
    id: admin.id,
    username: admin.username,
    role: admin.role,
    is_disabled: admin.isDisabled,
    totp_enabled: admin.totpEnabledAt !== null,
    scopes: {
      "users.read": scope("users.read"),
      "users.write": scope("users.write"),
      "users.lifecycle": scope("users.lifecycle"),
      "links.read": scope("links.read"),
      "access.write": scope("access.write"),
    },
    max_users: admin.maxUsers,
    max_data_bytes: admin.maxDataBytes,
    allowed_group_ids: admin.allowedGroupIds,
    allowed_plan_ids: admin.allowedPlanIds,
    owned: {
      users: owned.users,
      data_limit_bytes: owned.dataBytes,
      unlimited_users: owned.unlimitedUsers,
    },
    created_at: admin.createdAt,
    updated_at: admin.updatedAt,
  };
}
