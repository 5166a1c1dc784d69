// What every subscription format renders: a list of entries, each a real link target or a
// placeholder whose name says why there is nothing to connect to (no configurations, an expired or
// disabled user: the lifecycle supplies the text). A placeholder is written as a VLESS entry to
// 0.0.0.0:1 with the nil uuid: valid in every format, so clients import it and show its name, and it
// can carry nothing.
import { uniqueRemarks } from "../build.ts";
import type { LinkTarget, VlessTarget } from "../types.ts";

export type SubscriptionEntry = { kind: "link"; target: LinkTarget } | { kind: "placeholder"; text: string };

/** An entry a format could not express, left out of the document and listed (comment or log). */
export type LeftOut = { name: string; reason: string };

export type RenderedFormat = { body: string; leftOut: LeftOut[] };

export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

export function placeholderTarget(text: string): VlessTarget {
  return {
    protocol: "vless",
    host: "0.0.0.0",
    port: 1,
    remark: text,
    credential: { id: NIL_UUID, encryption: "none" },
    transport: { type: "tcp" },
    security: { type: "none" },
  };
}

/** Each entry as a target with its unique name (names are what groups refer to). */
export function namedTargets(entries: readonly SubscriptionEntry[]): { name: string; target: LinkTarget }[] {
  const targets = entries.map((entry) =>
    entry.kind === "link" ? entry.target : placeholderTarget(entry.text),
  );
  const names = uniqueRemarks(targets.map((target) => target.remark));
  return targets.map((target, i) => ({ name: names[i] ?? target.remark, target }));
}

/** What Xray/sing-box/mihomo call a Shadowsocks method the link calls chacha20-poly1305. */
export function ietfMethod(method: string): string {
  return method === "chacha20-poly1305" ? "chacha20-ietf-poly1305" : method;
}

/** Placeholder text when a user has no configurations, or none a format can express. */
export const NOTHING_TO_CONNECT = "no configurations";
export const NOTHING_FOR_THIS_APP = "no configurations this app can use";
