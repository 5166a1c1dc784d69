// Reading PEM certificates and keys: the facts the API reports, and the checks an imported pair must pass.
// Problem messages are built from fixed text and public certificate fields only, never from key input.
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { classifyDomain, normaliseDomain } from "./domain-name.ts";
import { X509Certificate as AsnCertificate, SubjectAlternativeNameExtension } from "./peculiar-x509.ts";

export type CertificateFacts = {
  notBefore: Date;
  notAfter: Date;
  issuer: string;
  subject: string;
  subjectAltNames: string[];
  /** Upper-case hex pairs joined by colons, as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprintSha256: string;
  /** Upper-case hex, as `openssl x509 -serial` prints it. */
  serial: string;
};

export const IMPORT_PROBLEM_CODES = [
  "certificate_unparseable",
  "key_unparseable",
  "key_encrypted",
  "key_mismatch",
  "domain_not_covered",
  "certificate_expired",
] as const;
export type ImportProblemCode = (typeof IMPORT_PROBLEM_CODES)[number];
export type ImportProblem = { code: ImportProblemCode; message: string };

export type ParsedChain = { leaf: X509Certificate; certificates: X509Certificate[]; pem: string };

export type ImportInput = { certificatePem: string; privateKeyPem: string; domain: string; now?: Date };
export type ImportResult =
  | { ok: true; certificatePem: string; privateKeyPem: string; facts: CertificateFacts }
  | { ok: false; problems: ImportProblem[] };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
const MAX_LISTED_NAMES = 10;

class ProblemError extends Error {
  readonly problem: ImportProblem;
  constructor(problem: ImportProblem) {
    super(problem.message);
    this.problem = problem;
  }
}

function problem(code: ImportProblemCode, message: string): ProblemError {
  return new ProblemError({ code, message });
}

/** Parses a leaf-first PEM chain; throws an Error whose message names what is wrong (no input echoed). */
export function parseCertificateChain(pem: string): ParsedChain {
  try {
    return readChain(pem);
  } catch (error) {
    if (error instanceof ProblemError) throw new Error(error.message);
    throw error;
  }
}

function readChain(pem: string): ParsedChain {
  const certificates: X509Certificate[] = [];
  for (const [, label, body] of pem.matchAll(PEM_BLOCK)) {
    if (label?.includes("PRIVATE KEY")) {
      throw problem(
        "certificate_unparseable",
        "certificate_pem contains a private key block; send the key in private_key",
      );
    }
    if (label !== "CERTIFICATE") {
      throw problem("certificate_unparseable", "certificate_pem may contain only CERTIFICATE blocks");
    }
    certificates.push(decodeCertificate(body ?? "", certificates.length + 1));
  }
  const leaf = certificates[0];
  if (leaf === undefined) {
    throw problem("certificate_unparseable", "certificate_pem contains no PEM CERTIFICATE block");
  }
  return { leaf, certificates, pem: certificates.map((c) => c.toString()).join("") };
}

function decodeCertificate(base64Body: string, position: number): X509Certificate {
  try {
    return new X509Certificate(Buffer.from(base64Body.replace(/\s+/g, ""), "base64"));
  } catch {
    throw problem(
      "certificate_unparseable",
      `certificate ${position} in certificate_pem is not a valid X.509 certificate`,
    );
  }
}

/** The facts the API reports about a certificate (the leaf of a chain). */
export function certificateFacts(leaf: X509Certificate): CertificateFacts {
  const asn = new AsnCertificate(leaf.raw);
  return {
    notBefore: asn.notBefore,
    notAfter: asn.notAfter,
    issuer: asn.issuer,
    subject: asn.subject,
    subjectAltNames: subjectAltNames(asn),
    fingerprintSha256: leaf.fingerprint256,
    serial: leaf.serialNumber.toUpperCase(),
  };
}

/** Facts of the leaf of a stored or freshly issued chain. */
export function readCertificateFacts(certificatePem: string): CertificateFacts {
  return certificateFacts(parseCertificateChain(certificatePem).leaf);
}

function subjectAltNames(asn: AsnCertificate): string[] {
  const extension = asn.getExtension(SubjectAlternativeNameExtension);
  if (extension === null) return [];
  return extension.names.items
    .filter((name) => name.type === "dns" || name.type === "ip")
    .map((name) => (name.type === "dns" ? name.value.toLowerCase() : name.value));
}

/** Parses an unencrypted PEM private key; throws a ProblemError naming what is wrong. */
function readPrivateKey(pem: string): KeyObject {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----/.test(pem) || /Proc-Type:\s*4,\s*ENCRYPTED/i.test(pem)) {
    throw problem("key_encrypted", "private_key is encrypted; send it without a passphrase");
  }
  if (!/-----BEGIN (?:RSA |EC )?PRIVATE KEY-----/.test(pem)) {
    throw problem("key_unparseable", "private_key is not a PEM-encoded private key (PKCS#8, SEC1 or PKCS#1)");
  }
  try {
    return createPrivateKey({ key: pem, format: "pem" });
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ERR_MISSING_PASSPHRASE") {
      throw problem("key_encrypted", "private_key is encrypted; send it without a passphrase");
    }
    throw problem("key_unparseable", "private_key could not be parsed as a private key");
  }
}

/** Whether the leaf certificate is valid for the domain: by SAN only, as browsers and Go's TLS do. */
export function certificateCoversDomain(leaf: X509Certificate, sans: string[], domain: string): boolean {
  const name = normaliseDomain(domain);
  switch (classifyDomain(name)) {
    case "ip":
      return leaf.checkIP(name) !== undefined;
    case "wildcard":
      return sans.includes(name);
    case "dns":
      return leaf.checkHost(name, { subject: "never" }) !== undefined;
    default:
      return false;
  }
}

function describeNames(names: string[]): string {
  if (names.length === 0) return "no DNS names or IP addresses";
  const listed = names.slice(0, MAX_LISTED_NAMES).join(", ");
  return names.length > MAX_LISTED_NAMES ? `${listed} and ${names.length - MAX_LISTED_NAMES} more` : listed;
}

function checkLeaf(
  leaf: X509Certificate,
  facts: CertificateFacts,
  domain: string,
  now: Date,
): ImportProblem[] {
  const problems: ImportProblem[] = [];
  if (!certificateCoversDomain(leaf, facts.subjectAltNames, domain)) {
    problems.push({
      code: "domain_not_covered",
      message: `the certificate is for ${describeNames(facts.subjectAltNames)}, not ${normaliseDomain(domain)}`,
    });
  }
  if (facts.notAfter.getTime() <= now.getTime()) {
    problems.push({
      code: "certificate_expired",
      message: `the certificate expired at ${facts.notAfter.toISOString()}`,
    });
  }
  return problems;
}

function attempt<T>(read: () => T, problems: ImportProblem[]): T | undefined {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    problems.push(error.problem);
    return undefined;
  }
}

/**
 * Checks an imported certificate chain and key: the chain parses, the key parses and is not encrypted,
 * the key matches the leaf, the leaf covers `domain` and has not expired. Returns every problem found,
 * or the normalised PEMs (chain re-encoded, key as PKCS#8) and the leaf's facts.
 */
export function validateImport(input: ImportInput): ImportResult {
  const problems: ImportProblem[] = [];
  const chain = attempt(() => readChain(input.certificatePem), problems);
  const key = attempt(() => readPrivateKey(input.privateKeyPem), problems);
  let facts: CertificateFacts | undefined;
  if (chain !== undefined) {
    facts = attempt(() => certificateFactsOrProblem(chain.leaf), problems);
    if (facts !== undefined)
      problems.push(...checkLeaf(chain.leaf, facts, input.domain, input.now ?? new Date()));
  }
  if (chain !== undefined && key !== undefined && !chain.leaf.checkPrivateKey(key)) {
    problems.push({ code: "key_mismatch", message: "private_key does not belong to the certificate" });
  }
  if (problems.length > 0 || chain === undefined || key === undefined || facts === undefined) {
    return { ok: false, problems };
  }
  const privateKeyPem = key.export({ type: "pkcs8", format: "pem" }).toString();
  return { ok: true, certificatePem: chain.pem, privateKeyPem, facts };
}

function certificateFactsOrProblem(leaf: X509Certificate): CertificateFacts {
  try {
    return certificateFacts(leaf);
  } catch {
    throw problem(
      "certificate_unparseable",
      "certificate 1 in certificate_pem has extensions that cannot be read",
    );
  }
}
