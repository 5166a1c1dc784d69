// VLESS flows: the one Portcullis offers, for the inbound builder, templates and share links.

/** XTLS Vision: VLESS on Xray over tcp with TLS or REALITY. */
export const VLESS_VISION_FLOW = "xtls-rprx-vision";
export const VLESS_FLOWS = [VLESS_VISION_FLOW] as const;
export type VlessFlow = (typeof VLESS_FLOWS)[number];
