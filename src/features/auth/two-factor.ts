// The TOTP second factor of an admin: enrolment (a sealed secret, its otpauth:// URI and QR code),
// confirmation with a first code (which also issues ten one-time recovery codes, stored hashed),
// the check at login (a code is accepted once; a recovery code once), and switching it off.
import { randomUUID } from "node:crypto";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { qrSvg } from "../../lib/qr.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { AdminRecord, AdminsRepository } from "./admins.repository.ts";
import { hashRecoveryCode, matchingStep, newRecoveryCodes, newTotpSecret, otpauthUri } from "./totp.ts";

export type SecondFactor = { totp_code?: string | undefined; recovery_code?: string | undefined };
export type Enrolment = { secret: string; otpauth_uri: string; qr_svg: string };

export class TwoFactor {
  constructor(
    private readonly admins: AdminsRepository,
    private readonly secretBox: SecretBox,
    private readonly now: () => Date,
  ) {}

  isEnabled(admin: AdminRecord): boolean {
    return admin.totpEnabledAt !== null && admin.totpSecretSealed !== null;
  }

  /** A new secret, pending until confirmed; enrolling again before that replaces it. */
  async enroll(admin: AdminRecord): Promise<Enrolment> {
    if (this.isEnabled(admin)) {
      throw new ConflictError(
        "two-factor authentication is already on; disable it first",
        "totp_already_enabled",
      );
    }
    const secret = newTotpSecret();
    await this.admins.updateAdmin(
      admin.id,
      { totpSecretSealed: this.secretBox.seal(secret), totpEnabledAt: null, totpLastStep: null },
      this.now().toISOString(),
    );
    const uri = otpauthUri(secret, admin.username);
    return { secret, otpauth_uri: uri, qr_svg: qrSvg(uri) };
  }

  /** The first code turns it on; the answer holds the recovery codes, shown this once. */
  async confirm(admin: AdminRecord, code: string): Promise<{ recovery_codes: string[] }> {
    if (this.isEnabled(admin)) {
      throw new ConflictError("two-factor authentication is already on", "totp_already_enabled");
    }
    if (admin.totpSecretSealed === null) {
      throw new ConflictError("enroll first: POST /api/auth/totp/enroll", "totp_not_enrolled");
    }
    const secret = this.secretBox.open(admin.totpSecretSealed);
    const step = matchingStep(secret, code, this.now().getTime(), null);
    if (step === undefined) {
      throw new ValidationError(
        "the code does not match",
        [{ path: "body.code", message: "wrong code" }],
        "totp_code_rejected",
      );
    }
    const now = this.now().toISOString();
    await this.admins.updateAdmin(admin.id, { totpEnabledAt: now, totpLastStep: step }, now);
    const codes = newRecoveryCodes();
    await this.admins.replaceRecoveryCodes(
      admin.id,
      codes.map((c) => ({ id: randomUUID(), hash: hashRecoveryCode(c) })),
      now,
    );
    return { recovery_codes: codes };
  }

  /** At login (or to disable): true when the code or recovery code is good, and uses it up. */
  async verify(admin: AdminRecord, factor: SecondFactor): Promise<boolean> {
    if (!this.isEnabled(admin) || admin.totpSecretSealed === null) return true;
    const nowMs = this.now().getTime();
    if (factor.totp_code !== undefined) {
      const secret = this.secretBox.open(admin.totpSecretSealed);
      const step = matchingStep(secret, factor.totp_code, nowMs, admin.totpLastStep);
      return step !== undefined && (await this.admins.acceptTotpStep(admin.id, step));
    }
    if (factor.recovery_code !== undefined) {
      const hash = hashRecoveryCode(factor.recovery_code);
      return this.admins.spendRecoveryCode(admin.id, hash, new Date(nowMs).toISOString());
    }
    return false;
  }

  async disable(admin: AdminRecord): Promise<void> {
    const now = this.now().toISOString();
    await this.admins.updateAdmin(
      admin.id,
      { totpSecretSealed: null, totpEnabledAt: null, totpLastStep: null },
      now,
    );
    await this.admins.replaceRecoveryCodes(admin.id, [], now);
  }
}
