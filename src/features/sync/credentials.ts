// Who a user is on a core and the secret they connect with: the core's view of a grant. The proxy
// user id (the core's client `email`) is derived from server + user, so all of a user's grants on
// one server share it and the core's per-user counters add up per server; each grant gets a fresh
// secret of its own.
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

/**
 * The one way grants get their secret: a new credential that is not in `taken` (the inbound's, or
 * the ones already tried), added to it. A collision is all but impossible; the unique index on
 * (inbound, credential) is the last word.
 */
export function drawCredential(
  protocol: CoreProtocol,
  shadowsocksMethod: string | undefined,
  taken: Set<string>,
): string {
  let credential = newCredential(protocol, shadowsocksMethod);
  while (taken.has(credential)) credential = newCredential(protocol, shadowsocksMethod);
  taken.add(credential);
  return credential;
}
