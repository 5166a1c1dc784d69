// api_credentials as the servers API accepts it: checked when saved, so a bad document is a 400 at
// the edge instead of a failed TLS handshake later. Messages never quote values.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { type ApiCredentials, parseApiCredentials as parseStructure } from "../../cores/api-credentials.ts";
import { type ErrorDetail, ValidationError } from "../../lib/errors.ts";

export type { ApiCredentials };

const PATH = "body.api_credentials";
const HOSTNAME_RE =
  /^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9_]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

export function isHostname(value: string): boolean {
  return isIP(value) !== 0 || HOSTNAME_RE.test(value);
}

/** Shape checks are the core client's (cores/api-credentials.ts); on top, certificates and keys must
 * parse, the key must match the certificate, and the names must be well-formed. */
export function parseApiCredentials(text: string): ApiCredentials {
  const out = parseStructure(text, PATH);
  const problems = checkPems(out);
  if (out.server_name !== undefined && !isHostname(out.server_name)) {
    problems.push({ path: `${PATH}.server_name`, message: "must be a DNS name or IP address" });
  }
  if (out.token !== undefined && !/^[\x21-\x7e]{1,4096}$/.test(out.token)) {
    problems.push({
      path: `${PATH}.token`,
      message: "must be 1-4096 printable ASCII characters without spaces",
    });
  }
  if (problems.length > 0) throw new ValidationError("api_credentials is invalid", problems);
  return out;
}

function checkPems(creds: ApiCredentials): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  let cert: X509Certificate | undefined;
  const parseCert = (field: "ca" | "cert") => {
    try {
      return new X509Certificate(creds[field] ?? "");
    } catch {
      problems.push({ path: `${PATH}.${field}`, message: "is not a PEM certificate" });
      return undefined;
    }
  };
  if (creds.ca !== undefined) parseCert("ca");
  if (creds.cert !== undefined) cert = parseCert("cert");
  if (creds.key !== undefined) {
    try {
      const key = createPrivateKey(creds.key);
      if (cert !== undefined && !cert.checkPrivateKey(key)) {
        problems.push({ path: `${PATH}.key`, message: "does not match cert" });
      }
    } catch {
      problems.push({ path: `${PATH}.key`, message: "is not an unencrypted PEM private key" });
    }
  }
  return problems;
}
