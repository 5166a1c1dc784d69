// Turning a render into a cache entry and an entry (or a render) into the HTTP answer: the strong
// ETag, the headers, and 304 Not Modified for a matching If-None-Match. No I/O.
import { createHash } from "node:crypto";
import { type ProfileHeaders, type RenderedSubscription, UPDATE_INTERVAL_HOURS } from "./subscription.ts";
import {
  bodyOf,
  type CachedSubscription,
  type InboundRef,
  type SubscriptionEntry,
} from "./subscription-cache.ts";

export type SubscriptionResponse = {
  status: 200 | 304;
  /** Names (lowercase) and values in one flat list, as Node's writeHead takes them; new for each response. */
  headers: string[];
  /**
   * The base64 text; undefined for 304. A string, not a Buffer: Node sends a string body in the same
   * write as the headers, a Buffer in a second one (writev), which cost more than the conversion.
   */
  body: string | undefined;
};

const CONTENT_TYPE = "text/plain; charset=utf-8";
const UPDATE_INTERVAL = String(UPDATE_INTERVAL_HOURS);
/** Clients and proxies may store a subscription but must ask again (If-None-Match) before using it. */
const CACHE_CONTROL = "no-cache";

/**
 * Strong, from the body and the profile headers (the name): byte-equal bodies with equal titles
 * share it. Traffic is left out on purpose: Subscription-Userinfo changes with every collection
 * while the links do not, and it is sent fresh with every 304 too.
 */
export function etagOf(rendered: RenderedSubscription): string {
  const hash = createHash("sha256")
    .update(rendered.body)
    .update("\n")
    .update(rendered.headers.title)
    .update("\n")
    .update(rendered.headers.disposition)
    .digest("base64url");
  return `"${hash.slice(0, 22)}"`;
}

/** Everything GET /sub answers with, in the order clients have always seen. */
function headersOf(profile: ProfileHeaders, etag: string): string[] {
  // biome-ignore format: name, value pairs
  return [
    "content-type", CONTENT_TYPE,
    "subscription-userinfo", profile.userinfo,
    "profile-title", profile.title,
    "profile-update-interval", UPDATE_INTERVAL,
    "content-disposition", profile.disposition,
    "etag", etag,
    "cache-control", CACHE_CONTROL,
  ];
}

/** What a 304 repeats (RFC 9110 §15.4.5), plus the current traffic for apps that read it from any answer. */
function notModifiedHeaders(etag: string, userinfo: string): string[] {
  return ["etag", etag, "cache-control", CACHE_CONTROL, "subscription-userinfo", userinfo];
}

/** What the cache stores for a render whose grants are on `inbounds` (in grant order). */
export function entryOf(
  rendered: RenderedSubscription,
  inbounds: readonly InboundRef[],
  nowS: number,
): SubscriptionEntry {
  // Each inbound's first link is what layouts with it build their reference body from.
  for (const [index, link] of rendered.links.entries()) {
    const inbound = inbounds[index];
    if (inbound !== undefined && inbound.reference === undefined && link !== undefined) {
      inbound.reference = link;
    }
  }
  const { userinfo, title, disposition } = rendered.headers;
  return {
    inbounds,
    body: rendered.body,
    etag: etagOf(rendered),
    userinfo,
    title,
    disposition,
    renderedAtS: nowS,
  };
}

export function responseOf(entry: CachedSubscription, ifNoneMatch: string | undefined): SubscriptionResponse {
  if (ifNoneMatch !== undefined && matchesAny(ifNoneMatch, entry.etag)) {
    return { status: 304, headers: notModifiedHeaders(entry.etag, entry.userinfo), body: undefined };
  }
  return { status: 200, headers: headersOf(entry, entry.etag), body: bodyOf(entry) };
}

/** For a render that is not stored (cache off or full, or invalidated while it ran). */
export function uncachedResponseOf(
  rendered: RenderedSubscription,
  ifNoneMatch: string | undefined,
  etag = etagOf(rendered),
): SubscriptionResponse {
  if (ifNoneMatch !== undefined && matchesAny(ifNoneMatch, etag)) {
    return { status: 304, headers: notModifiedHeaders(etag, rendered.headers.userinfo), body: undefined };
  }
  return {
    status: 200,
    headers: headersOf(rendered.headers, etag),
    body: rendered.body,
  };
}

/** If-None-Match: `*` or a list of entity tags, compared weakly (RFC 9110 §13.1.2). */
export function matchesAny(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === etag) return true;
  for (const part of ifNoneMatch.split(",")) {
    const tag = part.trim();
    if (tag === "*" || tag === etag || tag === `W/${etag}`) return true;
  }
  return false;
}
