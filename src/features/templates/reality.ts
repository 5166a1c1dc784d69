// REALITY secrets a template can ask for through built-in placeholders: the x25519 key pair and the
// short id (Shadowsocks 2022 keys are made in protocols/shadowsocks.ts). Keys come from node:crypto.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from "node:crypto";

export type RealityKeys = {
  /** base64url without padding (43 characters), as `xray x25519` prints it. */
  privateKey: string;
  publicKey: string;
};

/** PKCS#8 wrapping of a raw X25519 private key (RFC 8410). */
const X25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex");

export function generateRealityKeys(): RealityKeys {
  const { privateKey } = generateKeyPairSync("x25519");
  const jwk = privateKey.export({ format: "jwk" });
  if (jwk.d === undefined || jwk.x === undefined) throw new Error("x25519 key export lacks d or x");
  return { privateKey: jwk.d, publicKey: jwk.x };
}

/** The public key for a REALITY private key (what clients put in `pbk`); throws on a malformed key. */
export function realityPublicKey(privateKey: string): string {
  const raw = Buffer.from(privateKey, "base64url");
  if (!/^[A-Za-z0-9_-]{43}$/.test(privateKey) || raw.length !== 32) {
    throw new RangeError("a REALITY private key is 32 bytes of base64url without padding");
  }
  const key = createPrivateKey({
    key: Buffer.concat([X25519_PKCS8_PREFIX, raw]),
    format: "der",
    type: "pkcs8",
  });
  const x = createPublicKey(key).export({ format: "jwk" }).x;
  if (x === undefined) throw new Error("x25519 public key export lacks x");
  return x;
}

/** A REALITY short id: 8 hex characters (4 random bytes). */
export function generateShortId(): string {
  return randomBytes(4).toString("hex");
}
