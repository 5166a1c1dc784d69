// Shadowsocks as Portcullis supports it, in one place: the methods an inbound may use and their
// aliases, which are Shadowsocks 2022, their key sizes, and how keys and passwords are made. The
// inbound builder, the share links, templates and grants all ask here, so no layer can accept a
// method another refuses.
import { randomBytes } from "node:crypto";

/** AEAD methods, by Xray's names (V2Ray 4.x knows them too). */
export const SHADOWSOCKS_AEAD_METHODS = ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"] as const;
/**
 * Shadowsocks 2022 (SIP022), Xray only. Users are added to a running inbound, which is multi-user,
 * and Xray's multi-user 2022 takes the AES methods only: 2022-blake3-chacha20-poly1305 is not offered.
 */
export const SHADOWSOCKS_2022_METHODS = ["2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm"] as const;

export type ShadowsocksAeadMethod = (typeof SHADOWSOCKS_AEAD_METHODS)[number];
export type Shadowsocks2022Method = (typeof SHADOWSOCKS_2022_METHODS)[number];
export type ShadowsocksMethod = ShadowsocksAeadMethod | Shadowsocks2022Method;

/** Other names operators write for the same methods (shadowsocks-libev, old V2Ray configs). */
const ALIASES = new Map<string, ShadowsocksMethod>([
  ["aead_aes_128_gcm", "aes-128-gcm"],
  ["aead_aes_256_gcm", "aes-256-gcm"],
  ["chacha20-ietf-poly1305", "chacha20-poly1305"],
  ["aead_chacha20_poly1305", "chacha20-poly1305"],
]);

const METHODS: readonly string[] = [...SHADOWSOCKS_AEAD_METHODS, ...SHADOWSOCKS_2022_METHODS];

/** The supported method `text` names (any case, aliases included), or undefined. */
export function normaliseShadowsocksMethod(text: string): ShadowsocksMethod | undefined {
  const lower = text.toLowerCase();
  return METHODS.includes(lower) ? (lower as ShadowsocksMethod) : ALIASES.get(lower);
}

/** Whether a method name is Shadowsocks 2022 (SIP022 names them all `2022-…`), supported or not. */
export function isShadowsocks2022(method: string | undefined): boolean {
  return method?.startsWith("2022-") === true;
}

/** The supported 2022 method `text` names, or undefined (an AEAD method, or none we support). */
export function shadowsocks2022Method(text: string): Shadowsocks2022Method | undefined {
  const method = normaliseShadowsocksMethod(text);
  return method !== undefined && isShadowsocks2022(method) ? (method as Shadowsocks2022Method) : undefined;
}

/** A 2022 key is the cipher's key: 16 bytes for AES-128, 32 for AES-256. */
export function ss2022KeyBytes(method: Shadowsocks2022Method): 16 | 32 {
  return method === "2022-blake3-aes-128-gcm" ? 16 : 32;
}

/** What is wrong with a 2022 key (standard base64 of exactly the key size), or undefined. */
export function ss2022KeyProblem(key: string, method: Shadowsocks2022Method): string | undefined {
  const bytes = ss2022KeyBytes(method);
  const isBase64 = /^[A-Za-z0-9+/]*={0,2}$/.test(key) && key.length % 4 === 0;
  if (!isBase64 || Buffer.from(key, "base64").length !== bytes) {
    return `must be base64 of exactly ${bytes} bytes (e.g. openssl rand -base64 ${bytes})`;
  }
  return undefined;
}

/** A fresh 2022 key: standard base64 of the method's key size. */
export function generateSs2022Key(method: Shadowsocks2022Method): string {
  return randomBytes(ss2022KeyBytes(method)).toString("base64");
}

/** A fresh user password for an inbound of `method`: a 2022 key, else 24 base64url characters. */
export function newShadowsocksPassword(method: string | undefined): string {
  const is2022 = method === undefined ? undefined : shadowsocks2022Method(method);
  return is2022 === undefined ? randomBytes(18).toString("base64url") : generateSs2022Key(is2022);
}

/** The name a share link carries: SIP002 parsers and ss-local know chacha20-poly1305 by its ietf name. */
export function sip002MethodName(method: ShadowsocksMethod): string {
  return method === "chacha20-poly1305" ? "chacha20-ietf-poly1305" : method;
}
