// Self-signed certificates for TLS inbounds whose clients pin or skip verification: a fresh key and a
// certificate whose SAN is the record's domain, signed in-process with @peculiar/x509.
import { randomBytes, webcrypto } from "node:crypto";
import { classifyDomain, normaliseDomain } from "./domain-name.ts";
import { DEFAULT_KEY_TYPE, exportPrivateKeyPem, generateKey, type KeyType } from "./keys.ts";
import {
  BasicConstraintsExtension,
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectAlternativeNameExtension,
  SubjectKeyIdentifierExtension,
  X509CertificateGenerator,
} from "./peculiar-x509.ts";

export const DEFAULT_SELF_SIGNED_VALIDITY_DAYS = 365;
/** Clients whose clocks run a little behind still accept a certificate made a moment ago. */
const BACKDATE_MS = 5 * 60_000;
const DAY_MS = 86_400_000;
/** RFC 5280 caps a CN at 64 characters; longer names live only in the SAN. */
const MAX_COMMON_NAME = 64;

export type SelfSignedOptions = {
  domain: string;
  validityDays?: number;
  keyType?: KeyType;
  now?: Date;
};

export type GeneratedCertificate = { certificatePem: string; privateKeyPem: string };

/** A positive 128-bit serial: random, so regenerating never repeats one. */
function randomSerialHex(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString("hex");
}

function validityWindow(now: Date, validityDays: number): { notBefore: Date; notAfter: Date } {
  if (!Number.isInteger(validityDays) || validityDays < 1) {
    throw new RangeError(`validity must be a whole number of days ≥ 1, got ${validityDays}`);
  }
  const wholeSeconds = Math.floor(now.getTime() / 1000) * 1000;
  return {
    notBefore: new Date(wholeSeconds - BACKDATE_MS),
    notAfter: new Date(wholeSeconds + validityDays * DAY_MS),
  };
}

export async function generateSelfSigned(options: SelfSignedOptions): Promise<GeneratedCertificate> {
  const domain = normaliseDomain(options.domain);
  const kind = classifyDomain(domain);
  if (kind === undefined) throw new RangeError("domain must be a DNS name, a wildcard or an IP address");
  const key = await generateKey(options.keyType ?? DEFAULT_KEY_TYPE);
  const window = validityWindow(
    options.now ?? new Date(),
    options.validityDays ?? DEFAULT_SELF_SIGNED_VALIDITY_DAYS,
  );
  const usages = KeyUsageFlags.digitalSignature | (key.isRsa ? KeyUsageFlags.keyEncipherment : 0);
  const certificate = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerialHex(),
      name: domain.length <= MAX_COMMON_NAME ? [{ CN: [domain] }] : [{ O: ["Portcullis self-signed"] }],
      ...window,
      keys: key.keys,
      signingAlgorithm: key.signingAlgorithm,
      extensions: [
        new BasicConstraintsExtension(false, undefined, true),
        new KeyUsagesExtension(usages, true),
        new ExtendedKeyUsageExtension([ExtendedKeyUsage.serverAuth]),
        new SubjectAlternativeNameExtension([{ type: kind === "ip" ? "ip" : "dns", value: domain }]),
        await SubjectKeyIdentifierExtension.create(key.keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return {
    certificatePem: `${certificate.toString("pem")}\n`,
    privateKeyPem: await exportPrivateKeyPem(key),
  };
}
