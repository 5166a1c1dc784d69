// What a subscription says of a user who may not connect (issue 12): instead of links, one entry
// whose name says why and until when ("expired on 2026-12-01", "data limit reached, resets on …",
// "disabled"). The entry is a VLESS link to 0.0.0.0:1 with the nil uuid, the very target of the
// renderers' placeholder (links/formats/entries.ts): it connects nowhere, every client shows its
// name. It is kept as a layout of one pseudo-inbound per text, so every format (base64, links,
// mihomo, sing-box, xray-json) renders and caches it like any other user, and groups stay valid. on_hold users get their real links: their clock starts
// with their first traffic (Marzban's behaviour). Pure functions, no I/O.
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";
import { nextResetAt } from "../../lib/periods.ts";
import { NIL_UUID } from "../../links/formats/entries.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import type { InboundRef } from "./layout-templates.ts";

/** The credential of a placeholder entry (the renderers' own placeholder target has the same). */
export { NIL_UUID };
/** Ids of placeholder refs start with this (inbound ids are uuids: never confused). */
export const PLACEHOLDER_PREFIX = "placeholder:";

export type PlaceholderTexts = {
  disabled: string;
  /** {date}: expire_at's day (UTC, YYYY-MM-DD). */
  expired: string;
  /** The limit is reached and no reset is scheduled. */
  limited: string;
  /** {date}: the next reset's day (UTC, YYYY-MM-DD). */
  limitedUntil: string;
};

export const DEFAULT_PLACEHOLDER_TEXTS: PlaceholderTexts = {
  disabled: "disabled",
  expired: "expired on {date}",
  limited: "data limit reached",
  limitedUntil: "data limit reached, resets on {date}",
};

/** The numbers of a user the placeholder depends on. */
export type PlaceholderUser = {
  status: UserStatus;
  dataLimitReset: DataLimitReset;
  expireAt: string | null;
  lastResetAt: string | null;
  createdAt: string;
};

/** Whether the user gets their real links: active, and on_hold (their clock starts at first traffic). */
export function getsLinks(status: UserStatus): boolean {
  return status === "active" || status === "on_hold";
}

/** The placeholder's text for a user who gets no links, or undefined for one who does. */
export function placeholderText(
  user: PlaceholderUser,
  texts: PlaceholderTexts,
  now: Date,
): string | undefined {
  switch (user.status) {
    case "active":
    case "on_hold":
      return undefined;
    case "disabled":
      return texts.disabled;
    case "expired":
      return withDate(texts.expired, user.expireAt === null ? undefined : new Date(user.expireAt));
    case "limited": {
      // The same boundary the lifecycle job resets at (month_rolling: whole months from creation).
      const next = nextResetAt(user.dataLimitReset, user.createdAt, now);
      return next === null ? texts.limited : withDate(texts.limitedUntil, next);
    }
  }
}

/** {date} → the day in UTC (YYYY-MM-DD); without a date, "?" (an expired user without expire_at). */
function withDate(text: string, date: Date | undefined): string {
  const day = date === undefined || Number.isNaN(date.getTime()) ? "?" : date.toISOString().slice(0, 10);
  return text.replaceAll("{date}", day);
}

/** The link parameters of a placeholder entry named `text`. */
export function placeholderParams(text: string): LinkParams {
  return {
    version: 1,
    protocol: "vless",
    host: "0.0.0.0",
    port: 1,
    remark: text,
    transport: { type: "tcp" },
    security: { type: "none" },
    vlessEncryption: "none",
  };
}

/** Placeholder refs by text, shared by every user showing that text (a layout per text). */
export class PlaceholderRefs {
  readonly #refs = new Map<string, InboundRef>();

  ref(text: string): InboundRef {
    let ref = this.#refs.get(text);
    if (ref === undefined) {
      ref = { id: `${PLACEHOLDER_PREFIX}${text}`, params: placeholderParams(text), isStale: false };
      this.#refs.set(text, ref);
    }
    return ref;
  }

  clear(): void {
    this.#refs.clear();
  }
}
