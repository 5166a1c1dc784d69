// The peers' old subscription URLs after an import (issue 51): which Portcullis subscription an old
// key names. A Marzban/PasarGuard token is checked with the imported secret and is void when issued
// before the user's sub_revoked_at; a 3x-ui subId is looked up as it is. Either is void once the
// user's subscription was revoked in Portcullis (POST /api/users/{id}/revoke-subscription). The
// answer is the user's current sub_token: /sub answers it as its own. Resolutions are kept for a few
// seconds per key (hits and misses), so a client polling an old URL costs one lookup per interval.
import type { SecretBox } from "../../lib/secret-box.ts";
import { isSafeLine } from "../../lib/text.ts";
import type { ImportRepository } from "./import.repository.ts";
import { verifyMarzbanToken } from "./legacy-tokens.ts";
import type { PeerSource } from "./peer.ts";

export type LegacyHit = { userId: string; subToken: string };

const TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;

export class LegacySubscriptions {
  #secret: { value: string | null; atMs: number } | undefined;
  readonly #cache = new Map<string, { hit: LegacyHit | undefined; atMs: number }>();

  constructor(
    private readonly repository: ImportRepository,
    private readonly secretBox: SecretBox,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The user an old key names (a Marzban token, else a 3x-ui subId), or undefined (404). */
  async resolve(key: string, source?: PeerSource): Promise<LegacyHit | undefined> {
    if (key.length === 0 || key.length > 2048) return undefined;
    const cacheKey = `${source ?? ""}\u0000${key}`;
    const now = this.nowMs();
    const cached = this.#cache.get(cacheKey);
    if (cached !== undefined && now - cached.atMs < TTL_MS) return cached.hit;
    const hit =
      source === "3x-ui"
        ? await this.#xui(key)
        : ((await this.#marzban(key)) ?? (source === undefined ? await this.#xui(key) : undefined));
    if (this.#cache.size >= MAX_ENTRIES) this.#cache.clear();
    this.#cache.set(cacheKey, { hit, atMs: now });
    return hit;
  }

  async #marzban(token: string): Promise<LegacyHit | undefined> {
    const secret = await this.#marzbanSecret();
    if (secret === null) return undefined;
    const claims = verifyMarzbanToken(token, secret);
    if (claims === undefined) return undefined;
    // A signed name the import could not have brought over (it takes one line of safe text, at most
    // 128 characters) names nobody: never looked up (PostgreSQL refuses a NUL in text: a 500).
    const name = claims.username;
    if (name.length > 128 || !isSafeLine(name)) return undefined;
    const link = await this.repository.findLink("marzban", name.toLowerCase());
    if (link === undefined || link.revoked_here) return undefined;
    if (link.revoked_at !== null && claims.issuedAtMs < Date.parse(link.revoked_at)) return undefined;
    return { userId: link.user_id, subToken: link.sub_token };
  }

  async #xui(subId: string): Promise<LegacyHit | undefined> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(subId)) return undefined;
    const link = await this.repository.findLink("3x-ui", subId);
    if (link === undefined || link.revoked_here) return undefined;
    return { userId: link.user_id, subToken: link.sub_token };
  }

  async #marzbanSecret(): Promise<string | null> {
    const now = this.nowMs();
    if (this.#secret !== undefined && now - this.#secret.atMs < TTL_MS) return this.#secret.value;
    const sealed = await this.repository.sealedSecret("marzban");
    const value = sealed === undefined ? null : this.secretBox.open(sealed);
    this.#secret = { value, atMs: now };
    return value;
  }

  /** Marzban's /sub/{token}/info, in Marzban's field names. */
  async info(hit: LegacyHit) {
    const user = await this.repository.userInfo(hit.userId);
    if (user === undefined) return undefined;
    const iso = (value: string | Date | null) => (value === null ? null : new Date(value).toISOString());
    const expire = iso(user.expire_at);
    return {
      username: user.name,
      status: user.status,
      used_traffic: Number(user.used_bytes),
      lifetime_used_traffic: Number(user.lifetime_used_bytes),
      data_limit: user.data_limit_bytes === null ? null : Number(user.data_limit_bytes),
      data_limit_reset_strategy: user.data_limit_reset,
      expire: expire === null ? null : Math.floor(Date.parse(expire) / 1000),
      on_hold_expire_duration:
        user.on_hold_duration_seconds === null ? null : Number(user.on_hold_duration_seconds),
      on_hold_timeout: iso(user.on_hold_timeout_at),
      created_at: iso(user.created_at),
      online_at: iso(user.online_at),
      sub_updated_at: iso(user.sub_updated_at),
    };
  }
}
