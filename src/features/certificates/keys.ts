// Key pairs for the certificates Portcullis makes itself (self-signed ones and ACME CSRs), through
// node's WebCrypto so @peculiar/x509 can sign with them; no openssl subprocess.
import { webcrypto } from "node:crypto";

export const KEY_TYPES = ["ecdsa-p256", "ecdsa-p384", "rsa-2048", "rsa-4096"] as const;
export type KeyType = (typeof KEY_TYPES)[number];
export const DEFAULT_KEY_TYPE: KeyType = "ecdsa-p256";

type KeyAlgorithms = {
  generate: webcrypto.EcKeyGenParams | webcrypto.RsaHashedKeyGenParams;
  sign: webcrypto.EcdsaParams | webcrypto.Algorithm;
};

const RSA_EXPONENT = new Uint8Array([1, 0, 1]);

function algorithmsFor(keyType: KeyType): KeyAlgorithms {
  switch (keyType) {
    case "ecdsa-p256":
      return { generate: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" } };
    case "ecdsa-p384":
      return { generate: { name: "ECDSA", namedCurve: "P-384" }, sign: { name: "ECDSA", hash: "SHA-384" } };
    case "rsa-2048":
    case "rsa-4096": {
      const modulusLength = keyType === "rsa-2048" ? 2048 : 4096;
      const generate = {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength,
        publicExponent: RSA_EXPONENT,
        hash: "SHA-256",
      };
      return { generate, sign: { name: "RSASSA-PKCS1-v1_5" } };
    }
  }
}

export type GeneratedKey = {
  keys: webcrypto.CryptoKeyPair;
  /** The algorithm to sign certificates and CSRs with this key. */
  signingAlgorithm: webcrypto.EcdsaParams | webcrypto.Algorithm;
  isRsa: boolean;
};

export async function generateKey(keyType: KeyType = DEFAULT_KEY_TYPE): Promise<GeneratedKey> {
  const { generate, sign } = algorithmsFor(keyType);
  const keys = await webcrypto.subtle.generateKey(generate, true, ["sign", "verify"]);
  return { keys, signingAlgorithm: sign, isRsa: keyType.startsWith("rsa-") };
}

/** PKCS#8 PEM ("BEGIN PRIVATE KEY"), the form stored (encrypted) and handed to the proxy core. */
export async function exportPrivateKeyPem(key: GeneratedKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", key.keys.privateKey));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}
