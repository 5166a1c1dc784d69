// The write-only `api_credentials` of a server: how to reach a protected core API (TLS CA, client
// certificate for mTLS at a fronting proxy, server-name override, bearer token). Values never
// appear in an error message.

import { createHash } from "node:crypto";
import { ValidationError } from "../lib/errors.ts";

export type ApiCredentials = {
  /** PEM of the CA (or self-signed certificate) that signed the API's certificate. */
  ca?: string;
  /** PEM client certificate and key, presented for mTLS (to a proxy in front of the core). */
  cert?: string;
  key?: string;
  /** Name to verify the certificate against when the address is an IP. */
  server_name?: string;
  /** Sent as `authorization: Bearer <token>` on every call (for a proxy in front of the core). */
  token?: string;
};

const KEYS = ["ca", "cert", "key", "server_name", "token"] as const;
const PEM_MARKERS = {
  ca: /-----BEGIN CERTIFICATE-----/,
  cert: /-----BEGIN CERTIFICATE-----/,
  key: /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
} as const;

/** Parses the JSON document (or its text); throws ValidationError naming fields, never values. */
export function parseApiCredentials(input: unknown, path = "api_credentials"): ApiCredentials {
  const value = typeof input === "string" ? parseJsonText(input, path) : input;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ValidationError("api_credentials must be a JSON object", [
      { path, message: "must be an object" },
    ]);
  }
  const details: { path: string; message: string }[] = [];
  const out: ApiCredentials = {};
  for (const [key, field] of Object.entries(value)) {
    const known = KEYS.find((name) => name === key);
    if (known === undefined) details.push({ path: `${path}.${key}`, message: "unknown key" });
    else if (field === undefined || field === null) continue;
    else if (typeof field !== "string" || field.trim() === "") {
      details.push({ path: `${path}.${key}`, message: "must be a non-empty string" });
    } else if (known !== "server_name" && known !== "token" && !PEM_MARKERS[known].test(field)) {
      details.push({ path: `${path}.${key}`, message: "must be PEM text" });
    } else out[known] = field;
  }
  if ((out.cert === undefined) !== (out.key === undefined)) {
    details.push({ path, message: "cert and key go together (mTLS client certificate)" });
  }
  if (out.token !== undefined && /[\r\n]/.test(out.token)) {
    details.push({ path: `${path}.token`, message: "must be one line" });
  }
  if (details.length > 0) throw new ValidationError("api_credentials is invalid", details);
  return out;
}

function parseJsonText(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError("api_credentials is not valid JSON", [
      { path, message: "must be a JSON object" },
    ]);
  }
}

/** TLS is used when any TLS material is given, or a token must travel off the machine. */
export function usesTls(credentials: ApiCredentials | undefined, address: string): boolean {
  if (credentials === undefined) return false;
  if (credentials.ca ?? credentials.cert ?? credentials.server_name) return true;
  return credentials.token !== undefined && !isLocalAddress(address);
}

export function isLocalAddress(address: string): boolean {
  if (address.startsWith("unix:")) return true;
  const host = address
    .replace(/^dns:(\/\/\/)?/, "")
    .replace(/:\d+$/, "")
    .replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/** A stable fingerprint of the credentials, for pool keys; reveals nothing about them. */
export function credentialsHash(credentials: ApiCredentials | undefined): string {
  if (credentials === undefined) return "none";
  const canonical = JSON.stringify(KEYS.map((key) => [key, credentials[key] ?? null]));
  return createHash("sha256").update(canonical).digest("hex").slice(0, 32);
}

/** The secret strings that must be cut out of any text shown to a person. */
export function credentialSecrets(credentials: ApiCredentials | undefined): string[] {
  if (credentials === undefined) return [];
  return [credentials.token, credentials.key].filter((value): value is string => value !== undefined);
}
