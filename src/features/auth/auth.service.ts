// Admin sign-in: password (and, when enrolled, a TOTP code or a recovery code) for opaque bearer
// tokens (stored as SHA-256 hashes, revocable, expiring), named long-lived API keys that may be
// narrowed to a lower role, the first-admin bootstrap, and login throttling. Every request's
// principal carries its admin's current role, so a role change or a disabled admin applies at once.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  AppError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
} from "../../lib/errors.ts";
import type { Principal } from "../../lib/http.ts";
import { hashPassword, randomPassword, verifyPassword } from "../../lib/password.ts";
import {
  isRole,
  isWithin,
  type Permission,
  permissionsOf,
  type Role,
  readIdList,
  readOwnScope,
} from "../../lib/roles.ts";
import type { AdminRecord, AdminsRepository } from "./admins.repository.ts";
import type { AuthRepository, StoredToken } from "./auth.repository.ts";
import type { LoginAttempt, LoginThrottle } from "./throttle.ts";
import type { Enrolment, SecondFactor, TwoFactor } from "./two-factor.ts";

export type IssuedToken = { access_token: string; token_type: "Bearer"; expires_in: number };
export type ApiKey = {
  id: string;
  name: string;
  role: Role | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
};
export type Me = {
  id: string;
  username: string;
  role: Role;
  admin_role: Role;
  token_kind: "session" | "api_key";
  permissions: Permission[];
  totp_enabled: boolean;
};
/** Where sign-ins are recorded (the audit log's `record`, wired in deps.ts). */
export interface LoginAudit {
  record(
    entry: {
      actor: { kind: "anonymous"; id: string; name: string; tokenId: null };
      action: string;
      method: string;
      route: string;
      targets: Record<string, string>;
      ip: string;
      requestId: string | null;
    },
    status: number,
  ): Promise<void>;
}

export type LoginRequest = { username: string; password: string } & SecondFactor;

const TOUCH_INTERVAL_MS = 60_000;

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export class AuthService {
  readonly #lastTouched = new Map<string, number>();
  // Compared against when the username is unknown, so a miss costs as much as a wrong password.
  readonly #dummyHash = hashPassword(randomPassword());

  constructor(
    private readonly repo: AuthRepository,
    private readonly admins: AdminsRepository,
    private readonly twoFactor: TwoFactor,
    private readonly throttle: LoginThrottle,
    private readonly tokenTtlSeconds: number,
    private readonly audit: LoginAudit | undefined,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** First start with no admin: create an owner; returns the generated password when none was given. */
  async ensureFirstAdmin(
    username: string,
    password: string | undefined,
  ): Promise<{ generatedPassword?: string } | undefined> {
    if ((await this.admins.countAdmins()) > 0) return undefined;
    const chosen = password ?? randomPassword();
    await this.createAdmin(username, chosen, "owner");
    return password === undefined ? { generatedPassword: chosen } : {};
  }

  async createAdmin(username: string, password: string, role: Role = "owner"): Promise<AdminRecord> {
    if (await this.admins.findByUsername(username)) {
      throw new ConflictError(`admin ${username} already exists`, "admin_username_taken");
    }
    const id = randomUUID();
    await this.admins.insertAdmin({
      id,
      username,
      passwordHash: await hashPassword(password),
      role,
      now: this.now().toISOString(),
    });
    return this.admins.getAdmin(id);
  }

  /** Sets a new password (the CLI's reset-password); the admin's sessions and API keys die. */
  async resetPassword(username: string, password: string): Promise<void> {
    const admin = await this.admins.findByUsername(username);
    if (admin === undefined) throw new NotFoundError("admin", username);
    await this.setPassword(admin.id, password);
  }

  async setPassword(adminId: string, password: string): Promise<void> {
    await this.admins.updateAdmin(
      adminId,
      { passwordHash: await hashPassword(password) },
      this.now().toISOString(),
    );
    await this.revokeTokens(adminId);
  }

  /** Ends every session and API key of an admin (password reset, disabled): a key whose admin was
   * taken away must not come back when the admin is re-enabled or gets a new password. */
  async revokeTokens(adminId: string): Promise<void> {
    await this.repo.deleteTokensOf(adminId);
  }

  async login(request: LoginRequest, ip: string, requestId: string | null = null): Promise<IssuedToken> {
    // Reserved before the first await: concurrent guesses count against the budget while they run.
    const attempt = this.throttle.reserve(ip, request.username);
    try {
      const admin = await this.admins.findByUsername(request.username);
      let signedIn: AdminRecord;
      try {
        signedIn = await this.#checkCredentials(admin, request, attempt);
      } catch (error) {
        // Failed sign-ins of existing admins are recorded; unknown usernames are not (people type
        // passwords into the username field).
        if (admin !== undefined) await this.#recordLogin(admin, ip, requestId, statusOf(error));
        throw error;
      }
      attempt.succeeded();
      const issued = await this.#issueSession(signedIn.id);
      await this.#recordLogin(signedIn, ip, requestId, 200);
      return issued;
    } finally {
      attempt.release();
    }
  }

  /** Password, then the second factor, then the disabled flag; a wrong password or code is a failure.
   * Returns the admin who signed in. */
  async #checkCredentials(
    admin: AdminRecord | undefined,
    request: LoginRequest,
    attempt: LoginAttempt,
  ): Promise<AdminRecord> {
    const ok = await verifyPassword(request.password, admin?.passwordHash ?? (await this.#dummyHash));
    if (admin === undefined || !ok) {
      attempt.failed();
      throw new UnauthorizedError("wrong username or password", "invalid_credentials");
    }
    if (this.twoFactor.isEnabled(admin)) {
      if (request.totp_code === undefined && request.recovery_code === undefined) {
        throw new UnauthorizedError(
          "this admin signs in with a second factor: send totp_code (or recovery_code)",
          "totp_required",
        );
      }
      // A wrong second factor is a failed login like a wrong password: the same budgets.
      if (!(await this.twoFactor.verify(admin, request))) {
        attempt.failed();
        throw new UnauthorizedError("the code is wrong or was used already", "invalid_totp");
      }
    }
    if (admin.isDisabled) throw new UnauthorizedError("this admin is disabled", "admin_disabled");
    return admin;
  }

  async #issueSession(adminId: string): Promise<IssuedToken> {
    const token = `pcs_${randomBytes(32).toString("base64url")}`;
    const now = this.now();
    await this.repo.deleteExpiredSessions(now.toISOString());
    await this.repo.insertToken({
      id: randomUUID(),
      adminId,
      kind: "session",
      name: null,
      role: null,
      tokenHash: hashToken(token),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.tokenTtlSeconds * 1000).toISOString(),
      lastUsedAt: null,
    });
    return { access_token: token, token_type: "Bearer", expires_in: this.tokenTtlSeconds };
  }

  async #recordLogin(
    admin: AdminRecord,
    ip: string,
    requestId: string | null,
    status: number,
  ): Promise<void> {
    await this.audit?.record(
      {
        actor: { kind: "anonymous", id: admin.id, name: admin.username, tokenId: null },
        action: "auth.login",
        method: "POST",
        route: "/api/auth/token",
        targets: { admin_id: admin.id },
        ip,
        requestId,
      },
      status,
    );
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const match = /^Bearer ([A-Za-z0-9_-]{16,200})$/.exec(authorization ?? "");
    if (match?.[1] === undefined) throw new UnauthorizedError();
    const stored = await this.repo.findTokenByHash(hashToken(match[1]));
    const now = this.now();
    if (stored === undefined || (stored.expiresAt !== null && new Date(stored.expiresAt) <= now)) {
      throw new UnauthorizedError("the bearer token is unknown, revoked or expired", "invalid_token");
    }
    if (stored.adminDisabled) throw new UnauthorizedError("this admin is disabled", "admin_disabled");
    await this.#touch(stored, now);
    const adminRole = isRole(stored.adminRole) ? stored.adminRole : "viewer";
    // A key narrowed to a role its admin no longer covers (the admin was demoted) acts as the admin.
    const keyRole = stored.role !== null && isRole(stored.role) ? stored.role : undefined;
    const role = keyRole !== undefined && isWithin(keyRole, adminRole) ? keyRole : adminRole;
    return {
      adminId: stored.adminId,
      username: stored.username,
      tokenId: stored.id,
      kind: stored.kind,
      role,
      ownScope: readOwnScope(stored.adminOwnScope),
      allowedGroupIds: readIdList(stored.adminAllowedGroupIds),
      allowedPlanIds: readIdList(stored.adminAllowedPlanIds),
    };
  }

  async me(principal: Principal): Promise<Me> {
    const admin = await this.admins.getAdmin(principal.adminId);
    return {
      id: admin.id,
      username: admin.username,
      role: principal.role,
      admin_role: admin.role,
      token_kind: principal.kind,
      permissions: permissionsOf(principal.role),
      totp_enabled: this.twoFactor.isEnabled(admin),
    };
  }

  async logout(principal: Principal): Promise<void> {
    await this.repo.deleteToken(principal.tokenId);
    this.#lastTouched.delete(principal.tokenId);
  }

  async createApiKey(
    principal: Principal,
    input: { name: string; expires_in_days?: number | undefined; role?: Role | undefined },
  ): Promise<ApiKey & { key: string }> {
    if (input.role !== undefined && !isWithin(input.role, principal.role)) {
      throw new ForbiddenError(
        `a key may be narrowed to a role within yours (${principal.role}), not ${input.role}`,
        "role_not_within",
      );
    }
    const key = `pck_${randomBytes(32).toString("base64url")}`;
    const now = this.now();
    const stored: StoredToken = {
      id: randomUUID(),
      adminId: principal.adminId,
      kind: "api_key",
      name: input.name,
      role: input.role ?? null,
      createdAt: now.toISOString(),
      expiresAt:
        input.expires_in_days === undefined
          ? null
          : new Date(now.getTime() + input.expires_in_days * 86_400_000).toISOString(),
      lastUsedAt: null,
    };
    await this.repo.insertToken({ ...stored, tokenHash: hashToken(key) });
    return { ...toApiKey(stored), key };
  }

  async listApiKeys(adminId: string): Promise<ApiKey[]> {
    return (await this.repo.listApiKeys(adminId)).map(toApiKey);
  }

  async deleteApiKey(adminId: string, id: string): Promise<void> {
    const key = await this.repo.findApiKey(adminId, id);
    if (key === undefined) throw new NotFoundError("API key", id);
    await this.repo.deleteToken(id);
  }

  async enrollTotp(principal: Principal): Promise<Enrolment> {
    return this.twoFactor.enroll(await this.#sessionAdmin(principal));
  }

  async confirmTotp(principal: Principal, code: string): Promise<{ recovery_codes: string[] }> {
    return this.twoFactor.confirm(await this.#sessionAdmin(principal), code);
  }

  /** An owner resets another admin's second factor (a lost phone). */
  async resetTotp(adminId: string): Promise<void> {
    await this.twoFactor.disable(await this.admins.getAdmin(adminId));
  }

  /** The second factor is managed from a signed-in session, never with an API key. */
  async #sessionAdmin(principal: Principal): Promise<AdminRecord> {
    if (principal.kind !== "session") {
      throw new ForbiddenError(
        "two-factor settings need a signed-in session, not an API key",
        "session_required",
      );
    }
    return this.admins.getAdmin(principal.adminId);
  }

  async #touch(token: StoredToken, now: Date): Promise<void> {
    const last = this.#lastTouched.get(token.id) ?? 0;
    if (now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.#lastTouched.set(token.id, now.getTime());
    await this.repo.touchToken(token.id, now.toISOString());
  }
}

function statusOf(error: unknown): number {
  return error instanceof AppError ? error.status : 500;
}

function toApiKey(token: StoredToken): ApiKey {
  return {
    id: token.id,
    name: token.name ?? "",
    role: token.role !== null && isRole(token.role) ? token.role : null,
    created_at: token.createdAt,
    expires_at: token.expiresAt,
    last_used_at: token.lastUsedAt,
  };
}
