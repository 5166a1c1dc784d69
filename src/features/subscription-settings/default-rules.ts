// The User-Agent rules /sub starts with (the operator edits them through /api/subscription-settings).
import type { Format } from "../../lib/subscription-formats.ts";

export type UaRule = { pattern: string; format: Format };

/**
 * The default rules, first match wins (case-insensitive): Clash-family apps (Marzban's and
 * Remnawave's regexes) get mihomo, sing-box apps (SFA/SFI/SFM/SFT, Karing, Hiddify) get sing-box,
 * and the Xray-based apps that import a JSON array (v2rayN ≥ 6.40, v2rayNG ≥ 1.8.29, Happ, Streisand,
 * V2Box, NPV Tunnel's ktor-client) get xray-json. Shadowrocket, FoXray, Loon and unknown clients get
 * base64.
 */
export const DEFAULT_UA_RULES: readonly UaRule[] = [
  {
    pattern:
      "^(clash-verge|clash[-.]?meta|clashx meta|clash-nyanpasu|flclash|flowvy|mihomo|murge|stash|koala-clash|prizrak-box|clashmetaforandroid)",
    format: "mihomo",
  },
  { pattern: "^(sfa|sfi|sfm|sft|karing|hiddifynext|hiddify|singbox|sing-box)", format: "sing-box" },
  { pattern: "^v2rayn/(6\\.(4\\d|[5-9]\\d)|[7-9]\\.|\\d{2,}\\.)", format: "xray-json" },
  { pattern: "^v2rayng/(1\\.8\\.(29|[3-9]\\d)|1\\.(9|\\d{2,})\\.|[2-9]\\.)", format: "xray-json" },
  { pattern: "^(happ|streisand|v2box|ktor-client|incy)", format: "xray-json" },
];
