// Admin accounts as owners manage them: create with a role, change role, disable, reset password or
// second factor, see and revoke their API keys, delete. A reset password or a disable ends the
// admin's sessions and API keys for good. There is always an owner who can sign in: the last one cannot be demoted,
// disabled or deleted, and an admin cannot disable or delete themself (a slip would lock them out).
import { ConflictError } from "../../lib/errors.ts";
import type { Principal } from "../../lib/http.ts";
import type { AdminRecord, AdminsRepository } from "../auth/admins.repository.ts";
import type { ApiKey, AuthService } from "../auth/auth.service.ts";
import type { AdminCreate, AdminUpdate, AdminView } from "./admins.schemas.ts";

export class AdminsService {
  constructor(
    private readonly admins: AdminsRepository,
    private readonly auth: AuthService,
  ) {}

  async list(): Promise<AdminView[]> {
    return (await this.admins.listAdmins()).map(toView);
  }

  async get(id: string): Promise<AdminView> {
    return toView(await this.admins.getAdmin(id));
  }

  async create(input: AdminCreate): Promise<AdminView> {
    return toView(await this.auth.createAdmin(input.username, input.password, input.role));
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
    const patch = {
      ...(input.role === undefined ? {} : { role: input.role }),
      ...(input.is_disabled === undefined ? {} : { isDisabled: input.is_disabled }),
    };
    await this.admins.updateKeepingAnOwner(id, patch, new Date().toISOString(), losesOwner);
    if (input.is_disabled === true) await this.auth.revokeTokens(id);
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

function toView(admin: AdminRecord): AdminView {
  return {
    id: admin.id,
    username: admin.username,
    role: admin.role,
    is_disabled: admin.isDisabled,
    totp_enabled: admin.totpEnabledAt !== null,
    created_at: admin.createdAt,
    updated_at: admin.updatedAt,
  };
}
