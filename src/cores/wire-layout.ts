// The wire layouts Portcullis speaks: a layout is a span of core releases in which every message
// Portcullis sends or reads has the same field numbers and type names. Xray renumbered its
// ReceiverConfig twice and replaced the SS-2022 user type once, so one "xray" schema is not enough.
// A server's layout is detected by layout-probe.ts (or pinned by the operator) and decides how the
// inbound builder encodes everything for that server.

import type { CoreFlavor } from "./core-types.ts";

export const WIRE_LAYOUTS = ["v2ray-4", "xray-1.8", "xray-24.9", "xray-25.1", "xray-25.10"] as const;
export type WireLayout = (typeof WIRE_LAYOUTS)[number];

/** What "xray" means where no layout is known yet (template checks, tests): the newest one. */
export const NEWEST_XRAY_LAYOUT: WireLayout = "xray-25.10";

/**
 * Where the receiver puts stream and sniffing settings:
 * - `r8`: allocation_strategy 3, stream_settings 4, domain_override 7, sniffing_settings 8 (Xray 1.8)
 * - `r7`: allocation_strategy 3, stream_settings 4, sniffing_settings 7 (... 25.9)
 * - `r6`: stream_settings 3, sniffing_settings 6 (25.10 and later)
 * - `v2ray`: V2Ray 4.x (port_range 1, stream_settings 4, sniffing_settings 8)
 */
export type ReceiverVariant = "v2ray" | "r8" | "r7" | "r6";

/**
 * How SS-2022 multi-user inbounds hold users: `legacy` = shadowsocks_2022.User{key, email, level}
 * (before 25.1); `account` = common.protocol.User with a shadowsocks_2022.Account (25.1 on).
 */
export type Ss2022Variant = "none" | "legacy" | "account";

/**
 * Which XHTTP (splithttp) settings have one meaning in every release of the layout:
 * - `none`: splithttp's Config was renumbered several times inside the span (1.8.15 ... 24.12), or
 *   did not exist yet: XHTTP is refused.
 * - `base`: host 1, path 2, mode 3, xPaddingBytes 5, noSSEHeader 7, scMaxEachPostBytes 8,
 *   scMaxBufferedPosts 10 (25.1.1 had xmux at 11, 25.1.30 on scStreamUpServerSecs: 11 is not sent).
 * - `keepalive`: as `base`, plus scStreamUpServerSecs 11 (25.1.30 and later).
 */
export type XhttpVariant = "none" | "base" | "keepalive";

export type LayoutFacts = {
  flavor: CoreFlavor;
  receiver: ReceiverVariant;
  ss2022: Ss2022Variant;
  xhttp: XhttpVariant;
  /** The releases whose own .proto files were read for this layout (docs/CORES.md). */
  checkedOn: readonly string[];
};

export const LAYOUT_FACTS: Record<WireLayout, LayoutFacts> = {
  "v2ray-4": {
    flavor: "v2ray",
    receiver: "v2ray",
    ss2022: "none",
    xhttp: "none",
    checkedOn: ["4.34 (the real core)"],
  },
  "xray-1.8": {
    flavor: "xray",
    receiver: "r8",
    ss2022: "legacy",
    xhttp: "none",
    checkedOn: ["1.8.1", "1.8.13"],
  },
  "xray-24.9": { flavor: "xray", receiver: "r7", ss2022: "legacy", xhttp: "none", checkedOn: ["24.9.30"] },
  "xray-25.1": {
    flavor: "xray",
    receiver: "r7",
    ss2022: "account",
    xhttp: "base",
    checkedOn: ["25.1.1", "25.6.8", "25.9.5"],
  },
  "xray-25.10": {
    flavor: "xray",
    receiver: "r6",
    ss2022: "account",
    xhttp: "keepalive",
    checkedOn: ["25.10.15", "26.2.6", "26.4.13", "26.5.10"],
  },
};

export function isWireLayout(value: unknown): value is WireLayout {
  return typeof value === "string" && (WIRE_LAYOUTS as readonly string[]).includes(value);
}

export function layoutFlavor(layout: WireLayout): CoreFlavor {
  return LAYOUT_FACTS[layout].flavor;
}

/** The Xray layout with this receiver and SS-2022 variant; undefined for a combination no release had. */
export function xrayLayoutOf(receiver: ReceiverVariant, ss2022: Ss2022Variant): WireLayout | undefined {
  return WIRE_LAYOUTS.find(
    (layout) => LAYOUT_FACTS[layout].receiver === receiver && LAYOUT_FACTS[layout].ss2022 === ss2022,
  );
}

/** What to build for: a layout, or a flavor standing for its newest layout. */
export type BuildTarget = CoreFlavor | WireLayout;

export function targetLayout(target: BuildTarget): WireLayout {
  if (target === "v2ray") return "v2ray-4";
  if (target === "xray") return NEWEST_XRAY_LAYOUT;
  return target;
}

/** Calls some releases have and others lack, detected by asking (UNIMPLEMENTED = absent). */
export const CORE_CAPABILITIES = ["listing", "online_users"] as const;
export type CoreCapability = (typeof CORE_CAPABILITIES)[number];

/** What Portcullis knows about one core process: how to encode for it and which calls it answers. */
export type CoreProfile = { layout: WireLayout; capabilities: CoreCapability[] };
