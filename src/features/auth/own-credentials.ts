// The one path by which an admin changes their own credentials: a new password needs the current
// one, and with two-factor on a code (or a recovery code); turning two-factor off needs a code.
// Both run from a signed-in session, never an API key, and every wrong password or code counts
// against the sign-in throttle (the same budgets as wrong codes at login; 429 with Retry-After past
// them). `PUT /api/admins/{id}` refuses these changes for the caller's own id (cannot_reset_self).
import { ForbiddenError, ValidationError } from "../../lib/errors.ts";
import type { Principal } from "../../lib/http.ts";
import { hashPassword, verifyPassword } from "../../lib/password.ts";
import type { AdminRecord, AdminsRepository } from "./admins.repository.ts";
import type { AuthRepository } from "./auth.repository.ts";
import type { LoginThrottle } from "./throttle.ts";
import type { SecondFactor, TwoFactor } from "./two-factor.ts";

export type PasswordChange = { current_password: string; new_password: string } & SecondFactor;

export class OwnCredentials {
  constructor(
    private readonly admins: AdminsRepository,
    private readonly tokens: AuthRepository,
    private readonly twoFactor: TwoFactor,
    private readonly throttle: LoginThrottle,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Sets a new password; the admin's other sessions end (this one and their API keys stay). */
  async changePassword(principal: Principal, change: PasswordChange, ip: string): Promise<void> {
    const admin = await this.#sessionAdmin(principal);
    await this.#guarded(admin, ip, async () => {
      if (!(await verifyPassword(change.current_password, admin.passwordHash))) {
        throw new ValidationError(
          "the current password is wrong",
          [{ path: "body.current_password", message: "wrong password" }],
          "current_password_rejected",
        );
      }
      if (this.twoFactor.isEnabled(admin)) await this.#spendCode(admin, change);
    });
    await this.admins.updateAdmin(
      principal.adminId,
      { passwordHash: await hashPassword(change.new_password) },
      this.now().toISOString(),
    );
    await this.tokens.deleteSessionsOf(principal.adminId, principal.tokenId);
  }

  /** Turning the second factor off needs a current code (or a recovery code), not just a session. */
  async disableTotp(principal: Principal, factor: SecondFactor, ip: string): Promise<void> {
    const admin = await this.#sessionAdmin(principal);
    if (!this.twoFactor.isEnabled(admin)) return;
    await this.#guarded(admin, ip, () => this.#spendCode(admin, factor));
    await this.twoFactor.disable(admin);
  }

  /** Runs `check` inside one reserved sign-in attempt: a ValidationError from it is a failure. */
  async #guarded(admin: AdminRecord, ip: string, check: () => Promise<void>): Promise<void> {
    const attempt = this.throttle.reserve(ip, admin.username);
    try {
      await check();
      attempt.succeeded();
    } catch (error) {
      if (error instanceof ValidationError) attempt.failed();
      throw error;
    } finally {
      attempt.release();
    }
  }

  async #spendCode(admin: AdminRecord, factor: SecondFactor): Promise<void> {
    if (!(await this.twoFactor.verify(admin, factor))) {
      // 400, not 401: the session is fine, only the code is wrong (or missing).
      throw new ValidationError(
        "send a current totp_code or an unused recovery_code",
        undefined,
        "totp_code_rejected",
      );
    }
  }

  async #sessionAdmin(principal: Principal): Promise<AdminRecord> {
    if (principal.kind !== "session") {
      throw new ForbiddenError(
        "your own password and second factor change from a signed-in session, not an API key",
        "session_required",
      );
    }
    return this.admins.getAdmin(principal.adminId);
  }
}
