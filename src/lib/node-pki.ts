// The small PKI between the panel and its node agents: the panel's CA (EC P-256), the panel's client
// certificate, agent certificates signed from the agent's certificate request, and SHA-256
// fingerprints. The panel and the agent both use it; only the panel ever holds the CA's key.
import { createHash, X509Certificate as NodeX509, randomBytes, webcrypto } from "node:crypto";
import type { X509Certificate } from "@peculiar/x509";

/**
 * @peculiar/x509 (with reflect-metadata and its ASN.1 stack) adds some 17 MB to a process's memory:
 * it is loaded on first use. The node agent uses it only to join and to renew (a new key's request);
 * the fingerprints and facts below use node:crypto and never load it.
 */
let x509Module: Promise<typeof import("@peculiar/x509")> | undefined;
function x509(): Promise<typeof import("@peculiar/x509")> {
  x509Module ??= import("reflect-metadata").then(() => import("@peculiar/x509"));
  return x509Module;
}

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;
/** A peer whose clock runs a little behind still accepts a certificate issued a moment ago. */
const BACKDATE_MS = 5 * 60_000;

export type KeyAndCertificate = { certPem: string; keyPem: string };
export type CertificateRole = "server" | "client";

/** The CN of the panel's client certificate: agents accept no other client. */
export const PANEL_CLIENT_NAME = "portcullis-panel";

function serialHex(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString("hex");
}

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", key));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}

async function importKeys(privatePem: string, certPem: string): Promise<webcrypto.CryptoKeyPair> {
  const der = Buffer.from(privatePem.replace(/-----[^-]+-----|\s/g, ""), "base64");
  const privateKey = await webcrypto.subtle.importKey("pkcs8", der, ALGORITHM, false, ["sign"]);
  const { X509Certificate } = await x509();
  const publicKey = await new X509Certificate(certPem).publicKey.export(ALGORITHM, ["verify"], webcrypto);
  return { privateKey, publicKey };
}

/** A fresh CA: 10 years, may sign end-entity certificates only (path length 0). */
export async function createAuthority(now = new Date()): Promise<KeyAndCertificate> {
  const { BasicConstraintsExtension, KeyUsageFlags, KeyUsagesExtension, X509CertificateGenerator } =
    await x509();
  const keys = await newKeys();
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialHex(),
      name: `CN=Portcullis node CA ${randomBytes(4).toString("hex")}`,
      notBefore: new Date(now.getTime() - BACKDATE_MS),
      notAfter: new Date(now.getTime() + 3650 * DAY_MS),
      keys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
      ],
    },
    webcrypto,
  );
  return { certPem: pem(cert), keyPem: await keyPem(keys.privateKey) };
}

type Issue = {
  authority: KeyAndCertificate;
  publicKey: webcrypto.CryptoKey;
  commonName: string;
  role: CertificateRole;
  validityDays: number;
  now?: Date;
};

async function issue(options: Issue): Promise<string> {
  const {
    BasicConstraintsExtension,
    ExtendedKeyUsage,
    ExtendedKeyUsageExtension,
    KeyUsageFlags,
    KeyUsagesExtension,
    X509Certificate,
    X509CertificateGenerator,
  } = await x509();
  const now = options.now ?? new Date();
  const ca = new X509Certificate(options.authority.certPem);
  const caKeys = await importKeys(options.authority.keyPem, options.authority.certPem);
  const usage = options.role === "server" ? ExtendedKeyUsage.serverAuth : ExtendedKeyUsage.clientAuth;
  const cert = await X509CertificateGenerator.create(
    {
      serialNumber: serialHex(),
      subject: `CN=${options.commonName}`,
      issuer: ca.subject,
      notBefore: new Date(now.getTime() - BACKDATE_MS),
      notAfter: new Date(now.getTime() + options.validityDays * DAY_MS),
      publicKey: options.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(false, undefined, true),
        new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
        new ExtendedKeyUsageExtension([usage], true),
      ],
    },
    webcrypto,
  );
  return pem(cert);
}

/** A key made here and a certificate for it (the panel's own client certificate). */
export async function issueKeyAndCertificate(options: Omit<Issue, "publicKey">): Promise<KeyAndCertificate> {
  const keys = await newKeys();
  const certPem = await issue({ ...options, publicKey: keys.publicKey });
  return { certPem, keyPem: await keyPem(keys.privateKey) };
}

/**
 * Signs the key of a certificate request whose own signature checks out. Only the key is taken from
 * the request: name, usage and lifetime are the panel's.
 */
export async function signRequest(csrPem: string, options: Omit<Issue, "publicKey">): Promise<string> {
  const { Pkcs10CertificateRequest } = await x509();
  let request: InstanceType<typeof Pkcs10CertificateRequest>;
  try {
    request = new Pkcs10CertificateRequest(csrPem);
  } catch {
    throw new RangeError("not a PEM certificate request");
  }
  if (!(await request.verify(webcrypto))) throw new RangeError("the request's signature does not verify");
  const publicKey = await request.publicKey.export(ALGORITHM, ["verify"], webcrypto).catch(() => {
    throw new RangeError("the request's key is not EC P-256");
  });
  return issue({ ...options, publicKey });
}

/** A key pair made on this host and a request for its certificate (the agent, at join and renewal). */
export async function makeKeyAndRequest(commonName: string): Promise<{ keyPem: string; csrPem: string }> {
  const { Pkcs10CertificateRequestGenerator } = await x509();
  const keys = await newKeys();
  const request = await Pkcs10CertificateRequestGenerator.create(
    { name: `CN=${commonName}`, keys, signingAlgorithm: ALGORITHM },
    webcrypto,
  );
  return { keyPem: await keyPem(keys.privateKey), csrPem: request.toString("pem") };
}

/** SHA-256 of the certificate's DER, lowercase hex without separators. */
export function fingerprintOf(certPem: string | Buffer): string {
  return new NodeX509(certPem).fingerprint256.replaceAll(":", "").toLowerCase();
}

export function fingerprintOfDer(der: Buffer): string {
  return createHash("sha256").update(der).digest("hex");
}

export function certificateFacts(certPem: string): { serial: string; notAfter: Date; subjectCn: string } {
  const cert = new NodeX509(certPem);
  const cn = /CN=([^\n,]*)/.exec(cert.subject)?.[1] ?? "";
  return { serial: cert.serialNumber.toLowerCase(), notAfter: new Date(cert.validTo), subjectCn: cn };
}

function pem(cert: X509Certificate): string {
  return `${cert.toString("pem")}\n`;
}
