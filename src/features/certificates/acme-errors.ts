// Turns what acme-client, axios, TLS and the DNS hook throw into one readable sentence for `last_error`
// and logs, and scrubs anything secret-looking from it (PEM blocks, the EAB HMAC key) on the way.
import { redact } from "../../lib/redact.ts";

export const ACME_STEPS = [
  "checking the request",
  "reading the ACME directory",
  "registering the ACME account",
  "creating the order",
  "validating the domain",
  "finalizing the order",
  "downloading the certificate",
  "waiting for the CA",
] as const;
export type AcmeStep = (typeof ACME_STEPS)[number];

/** Why an issuance failed: `step` says where, the message says what, without any key material. */
export class AcmeIssueError extends Error {
  readonly step: AcmeStep;
  constructor(step: AcmeStep, detail: string, options?: { cause?: unknown }) {
    super(`ACME issuance failed while ${step}: ${detail}`, options);
    this.name = "AcmeIssueError";
    this.step = step;
  }
}

const TLS_TRUST_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(?:-----END [A-Z0-9 ]+-----|$)/g;
const MAX_LENGTH = 600;

function errorCode(error: Error): string | undefined {
  return "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/** One line about `error`; never the stack, never a PEM block. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return typeof error === "string" ? scrub(error) : "unknown error";
  const code = errorCode(error);
  const message = error.message.trim() || error.name;
  if (code !== undefined && TLS_TRUST_CODES.has(code)) {
    return scrub(`the server's TLS certificate is not trusted (${code}: ${message})`);
  }
  const withCode = code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
  return scrub(withCode);
}

/** Removes PEM blocks and the given secrets, flattens to one line and bounds the length. */
export function scrub(text: string, secrets: readonly string[] = []): string {
  let clean = redact(text.replace(PEM_BLOCK, "[PEM block removed]"), secrets);
  clean = clean.replace(/\s+/g, " ").trim();
  return clean.length > MAX_LENGTH ? `${clean.slice(0, MAX_LENGTH)}…` : clean;
}

/** Hints for the mistakes operators make most; appended to the CA's own words. */
export function hintFor(step: AcmeStep, detail: string): string {
  if (step === "registering the ACME account" && /external ?account|eab|'kid'/i.test(detail)) {
    return " (check the External Account Binding key id and HMAC key)";
  }
  if (step === "reading the ACME directory" && /TLS certificate is not trusted/.test(detail)) {
    return " (is the directory URL right, and is its CA trusted?)";
  }
  return "";
}
