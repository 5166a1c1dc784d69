// The rules every URL-shaped share link follows (share-links.md §0): percent-escaping that the
// hand-written query splitters of v2rayN/v2rayNG and Go's url package all read the same way,
// punycode hosts, bracketed IPv6, an explicit port, and no empty or bare query keys.
import { isIPv4, isIPv6 } from "node:net";
import { domainToASCII } from "node:url";
import { UnprocessableError } from "../lib/errors.ts";

/** The target cannot be written as a link that clients would read back correctly. */
export class InvalidLinkTargetError extends UnprocessableError {
  constructor(message: string) {
    super(message, undefined, "invalid_link_target");
  }
}

// With the `u` flag a surrogate pair is one code point, so this matches only lone surrogates,
// which encodeURIComponent would throw on.
const LONE_SURROGATE = /[\uD800-\uDFFF]/gu;

/** RFC 3986 escaping over UTF-8: space → %20, and `+ = & % : / , #` all escaped. */
export function escapeComponent(value: string): string {
  return encodeURIComponent(value.replace(LONE_SURROGATE, "\uFFFD"));
}

const URL_DELIMITERS = /[\s/?#@:%[\]\\]/;
const ASCII_HOSTNAME = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/;

/** The host as links carry it: punycode for domains, bare IPv6 (brackets stripped). */
export function linkHost(host: string): string {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (isIPv6(bare)) {
    if (bare.includes("%")) throw new InvalidLinkTargetError(`host ${host}: IPv6 zone ids cannot be shared`);
    return bare.toLowerCase();
  }
  if (isIPv4(bare)) return bare;
  const ascii = URL_DELIMITERS.test(bare) ? "" : domainToASCII(bare);
  if (!ASCII_HOSTNAME.test(ascii))
    throw new InvalidLinkTargetError(`host ${JSON.stringify(host)} is not valid`);
  return ascii;
}

export function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidLinkTargetError(`port ${port} is not between 1 and 65535`);
  }
  return port;
}

/** `host:port`, with IPv6 in brackets; the port is always written (mihomo drops links without one). */
export function authority(host: string, port: number): string {
  const name = linkHost(host);
  return `${name.includes(":") ? `[${name}]` : name}:${checkPort(port)}`;
}

export type QueryPair = readonly [key: string, value: string | undefined];

// The proposal says values "must not be empty"; these three are the documented exceptions.
const MAY_BE_EMPTY = new Set(["sid", "spx", "authority"]);

/** `?k=v&…` from ordered pairs; absent (and disallowed empty) values leave their key out. */
export function queryString(pairs: readonly QueryPair[]): string {
  const written = pairs.filter(
    ([key, value]) => value !== undefined && (value !== "" || MAY_BE_EMPTY.has(key)),
  );
  if (written.length === 0) return "";
  return `?${written.map(([key, value]) => `${key}=${escapeComponent(value ?? "")}`).join("&")}`;
}

/** The `#remark` suffix. */
export function fragment(remark: string): string {
  return `#${escapeComponent(remark)}`;
}

/** Comma-joined list (tcp http host/path, alpn); items must not contain the separator. */
export function joinList(what: string, items: readonly string[] | undefined): string | undefined {
  if (items === undefined || items.length === 0) return undefined;
  for (const item of items) {
    if (item === "" || item.includes(",")) {
      throw new InvalidLinkTargetError(`${what} item ${JSON.stringify(item)} is empty or contains a comma`);
    }
  }
  return items.join(",");
}
