// What a certificate's `domain` may be: a DNS name, a wildcard (`*.example.com`) or an IP address.
// Generation, import checks and ACME orders all classify it the same way through this file.
import { isIP } from "node:net";

export type DomainKind = "dns" | "wildcard" | "ip";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Lower-cases and drops a trailing dot, so `Example.COM.` and `example.com` are one name. */
export function normaliseDomain(domain: string): string {
  const trimmed = domain.trim().toLowerCase();
  return trimmed.endsWith(".") ? trimmed.slice(0, -1) : trimmed;
}

/** The kind of a normalised domain, or `undefined` when it is none of the three. */
export function classifyDomain(domain: string): DomainKind | undefined {
  if (isIP(domain) !== 0) return "ip";
  const isWildcard = domain.startsWith("*.");
  const name = isWildcard ? domain.slice(2) : domain;
  if (name.length === 0 || name.length > 253) return undefined;
  const labels = name.split(".");
  if (!labels.every((label) => LABEL.test(label))) return undefined;
  if (isWildcard) return labels.length >= 2 ? "wildcard" : undefined;
  return "dns";
}
