// Encryption at rest for stored secrets (server API credentials, private keys, ACME account key).
// AES-256-GCM with a random 96-bit nonce per value; the key comes from config (PORTCULLIS_SECRET_KEY
// or the generated key file in DATA_DIR). Sealed form: "v1.<nonce>.<tag>.<ciphertext>", base64url parts.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";

export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("secret key must be 32 bytes");
    this.#key = key;
  }

  seal(plaintext: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce);
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, nonce, tag, body]
      .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
      .join(".");
  }

  open(sealed: string): string {
    const [version, nonce, tag, body] = sealed.split(".");
    if (version !== VERSION || nonce === undefined || tag === undefined || body === undefined) {
      throw new Error("sealed value has an unknown format");
    }
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(nonce, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  }
}
