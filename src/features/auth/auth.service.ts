// Admin sign-in: password login issuing opaque bearer tokens (stored as SHA-256 hashes, revocable,
// expiring), named long-lived API keys, the first-admin bootstrap, and login throttling.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { ConflictError, NotFoundError, RateLimitedError, UnauthorizedError } from "../../lib/errors.ts";
import type { Principal } from "../../lib/http.ts";
import { hashPassword, randomPassword, verifyPassword } from "../../lib/password.ts";
import type { AuthRepository, StoredToken } from "./auth.repository.ts";
import type { LoginThrottle } from "./throttle.ts";

export type IssuedToken = { access_token: string; token_type: "Bearer"; expires_in: number };
export type ApiKey = {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
};

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
    private readonly throttle: LoginThrottle,
    private readonly tokenTtlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** First start with no admin: create one; returns the generated password when none was given. */
  async ensureFirstAdmin(
    username: string,
    password: string | undefined,
  ): Promise<{ generatedPassword?: string } | undefined> {
    if ((await this.repo.countAdmins()) > 0) return undefined;
    const chosen = password ?? randomPassword();
    await this.createAdmin(username, chosen);
    return password === undefined ? { generatedPassword: chosen } : {};
  }

  async createAdmin(username: string, password: string): Promise<void> {
    if (await this.repo.findAdminByUsername(username))
      throw new ConflictError(`admin ${username} already exists`);
    const now = this.now().toISOString();
    await this.repo.insertAdmin({
      id: randomUUID(),
      username,
      passwordHash: await hashPassword(password),
      now,
    });
  }

  /** Sets a new password and revokes the admin's sessions (API keys stay). */
  async resetPassword(username: string, password: string): Promise<void> {
    const admin = await this.repo.findAdminByUsername(username);
    if (admin === undefined) throw new NotFoundError("admin", username);
    await this.repo.updatePassword(admin.id, await hashPassword(password), this.now().toISOString());
    await this.repo.deleteSessionsOf(admin.id);
  }

  async login(username: string, password: string, ip: string): Promise<IssuedToken> {
    const wait = this.throttle.retryAfterSeconds(ip, username);
    if (wait > 0) throw new RateLimitedError("too many failed logins; try again later", wait);
    const admin = await this.repo.findAdminByUsername(username);
    const ok = await verifyPassword(password, admin?.passwordHash ?? (await this.#dummyHash));
    if (admin === undefined || !ok) {
      this.throttle.recordFailure(ip, username);
      throw new UnauthorizedError("wrong username or password", "invalid_credentials");
    }
    this.throttle.recordSuccess(username);
    const token = `pcs_${randomBytes(32).toString("base64url")}`;
    const now = this.now();
    await this.repo.deleteExpiredSessions(now.toISOString());
    await this.repo.insertToken({
      id: randomUUID(),
      adminId: admin.id,
      kind: "session",
      name: null,
      tokenHash: hashToken(token),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.tokenTtlSeconds * 1000).toISOString(),
      lastUsedAt: null,
    });
    return { access_token: token, token_type: "Bearer", expires_in: this.tokenTtlSeconds };
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const match = /^Bearer ([A-Za-z0-9_-]{16,200})$/.exec(authorization ?? "");
    if (match?.[1] === undefined) throw new UnauthorizedError();
    const stored = await this.repo.findTokenByHash(hashToken(match[1]));
    const now = this.now();
    if (stored === undefined || (stored.expiresAt !== null && new Date(stored.expiresAt) <= now)) {
      throw new UnauthorizedError("the bearer token is unknown, revoked or expired", "invalid_token");
    }
    await this.#touch(stored, now);
    return { adminId: stored.adminId, tokenId: stored.id, kind: stored.kind };
  }

  async logout(principal: Principal): Promise<void> {
    await this.repo.deleteToken(principal.tokenId);
    this.#lastTouched.delete(principal.tokenId);
  }

  async createApiKey(
    adminId: string,
    name: string,
    expiresInDays: number | undefined,
  ): Promise<ApiKey & { key: string }> {
    const key = `pck_${randomBytes(32).toString("base64url")}`;
    const now = this.now();
    const stored: StoredToken = {
      id: randomUUID(),
      adminId,
      kind: "api_key",
      name,
      createdAt: now.toISOString(),
      expiresAt:
        expiresInDays === undefined
          ? null
          : new Date(now.getTime() + expiresInDays * 86_400_000).toISOString(),
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

  async #touch(token: StoredToken, now: Date): Promise<void> {
    const last = this.#lastTouched.get(token.id) ?? 0;
    if (now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.#lastTouched.set(token.id, now.getTime());
    await this.repo.touchToken(token.id, now.toISOString());
  }
}

function toApiKey(token: StoredToken): ApiKey {
  return {
    id: token.id,
    name: token.name ?? "",
    created_at: token.createdAt,
    expires_at: token.expiresAt,
    last_used_at: token.lastUsedAt,
  };
}
