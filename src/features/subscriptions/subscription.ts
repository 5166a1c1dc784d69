// GET /sub/{user_id} as a pure function of the rows: the base64 body of the user's share links and
// the headers client apps read (share-links.md §5). No I/O. The reference the subscription index's
// own renderer (links-template.ts) is tested against, and what it falls back to for a credential its
// writers do not handle.

import type { UserValues } from "../../lib/user-values.ts";
import { encodeSubscription } from "../../links/subscription.ts";
import { type LinkSource, linksOf } from "../access/links.ts";
import { hostEntries, withRemarkValues } from "../inbounds/host-entries.ts";
import type { LinkParams } from "../inbounds/link-params.ts";

export type SubscriptionGrant = {
  credential: string;
  /** null: the grant's inbound is inactive, so it gives no link (its traffic still counts). */
  link_params: LinkParams | null;
  uplink_bytes: number;
  downlink_bytes: number;
};

export type SubscriptionData = { userName: string; grants: SubscriptionGrant[] };

/** The values of the headers that differ between users (cached-response.ts writes all of them). */
export type ProfileHeaders = {
  /** Subscription-Userinfo */
  userinfo: string;
  /** Profile-Title */
  title: string;
  /** Content-Disposition */
  disposition: string;
};

export type RenderedSubscription = {
  body: string;
  /** Per grant, in grant order: its link, or undefined (inactive inbound, or a link that cannot be written). */
  links: readonly (string | undefined)[];
  headers: ProfileHeaders;
  /** Grants whose link could not be written (logged by the caller, left out of the body). */
  skipped: number;
};

/** Hours between client refreshes (Profile-Update-Interval). */
export const UPDATE_INTERVAL_HOURS = 12;

export function renderSubscription(data: SubscriptionData): RenderedSubscription {
  const { body, links, skipped } = renderLinks(data.grants);
  const upload = data.grants.reduce((sum, grant) => sum + grant.uplink_bytes, 0);
  const download = data.grants.reduce((sum, grant) => sum + grant.downlink_bytes, 0);
  return {
    body,
    links,
    headers: {
      userinfo: userinfoOf(upload, download),
      title: titleOf(data.userName),
      disposition: contentDisposition(data.userName),
    },
    skipped,
  };
}

/**
 * The body alone: the links of the grants whose inbound is active, one per entry of the inbound's
 * hosts (host-entries.ts; `variant` chooses from their SNI and Host lists), base64. `links` has the
 * first link of each grant. Remarks with per-user variables are filled from `user`.
 */
export function renderLinks(
  grants: readonly Pick<SubscriptionGrant, "credential" | "link_params">[],
  variant = 0,
  user?: UserValues,
) {
  const sources: LinkSource[] = [];
  const firsts = grants.map((grant) => {
    if (grant.link_params === null) return -1;
    const first = sources.length;
    for (const entry of hostEntries(grant.link_params, "links", variant))
      sources.push({ link_params: withUserRemark(entry, user), credential: grant.credential });
    return first < sources.length ? first : -1;
  });
  const built = linksOf(sources);
  const links = firsts.map((first) => (first < 0 ? undefined : built[first]));
  const written = built.filter((link): link is string => link !== undefined);
  return { body: encodeSubscription(written), links, skipped: sources.length - written.length };
}

/** The entry with its remark's per-user variables filled (a new object: nothing cached per user). */
export const withUserRemark = withRemarkValues;

/** What Profile-Title says before the user's name. */
export const TITLE_PREFIX = "Portcullis – ";

export function titleOf(userName: string): string {
  return `base64:${Buffer.from(`${TITLE_PREFIX}${userName}`, "utf8").toString("base64")}`;
}

export const NO_TRAFFIC = "upload=0; download=0; total=0; expire=0";

/**
 * Subscription-Userinfo: upload and download of the current period (used_bytes, split as
 * placeholders.ts splitUsage says), total = the data limit (0 = unlimited), expire = unix seconds
 * (0 = never).
 */
export function userinfoOf(upload: number, download: number, total = 0, expire = 0): string {
  if (upload === 0 && download === 0 && total === 0 && expire === 0) return NO_TRAFFIC;
  return `upload=${upload}; download=${download}; total=${total}; expire=${expire}`;
}

/** Names asciiFileName() keeps as they are: their Content-Disposition is the plain one. */
const PLAIN_FILE_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9._])?$/;

/** Content-Disposition when it is not `attachment; filename="<name>"`, else undefined (most names: cheaply). */
export function dispositionUnlessPlain(name: string): string | undefined {
  if (PLAIN_FILE_NAME.test(name)) return undefined;
  const disposition = contentDisposition(name);
  return disposition === `attachment; filename="${name}"` ? undefined : disposition;
}

/** An ASCII filename for every client, plus the UTF-8 name (RFC 6266) when the ASCII one loses something. */
export function contentDisposition(name: string): string {
  const ascii = asciiFileName(name);
  const plain = `attachment; filename="${ascii}"`;
  return ascii === name ? plain : `${plain}; filename*=UTF-8''${rfc5987(name)}`;
}

/** Letters without their accents, digits, dot, dash and underscore; runs of anything else become "-". */
function asciiFileName(name: string): string {
  const ascii = name
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+|-+$/g, "");
  return ascii === "" ? "subscription" : ascii;
}

/** encodeURIComponent leaves ' ( ) * raw, which RFC 5987 values may not contain. */
function rfc5987(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
