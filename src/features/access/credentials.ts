// Who a user is on a core and the secret they connect with. The proxy user id (the core's client
// `email`) is derived from server + user, so all of a user's grants on one server share it and the
// core's per-user counters add up per server; each grant gets a fresh secret of its own.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { CoreProtocol } from "../../cores/core-types.ts";
import { newShadowsocksPassword } from "../../protocols/shadowsocks.ts";

/** `u-` + 16 hex characters of sha256(server_id:user_id): URL-safe, stable, unique per user per server. */
export function proxyUserIdFor(serverId: string, userId: string): string {
  return `u-${createHash("sha256").update(`${serverId}:${userId}`).digest("hex").slice(0, 16)}`;
}

/**
 * A new secret: a UUID v4 for VLESS/VMess, 24 random base64url characters for Trojan and AEAD
 * Shadowsocks, a key of the method's size for Shadowsocks 2022.
 */
export function newCredential(protocol: CoreProtocol, shadowsocksMethod?: string): string {
  if (protocol === "vless" || protocol === "vmess") return randomUUID();
  if (protocol === "shadowsocks") return newShadowsocksPassword(shadowsocksMethod);
  return randomBytes(18).toString("base64url");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}
