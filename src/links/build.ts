// One entry point for the subscription service: render targets of any protocol, with remarks
// made unique first (mihomo renames duplicates to name-01…, which users cannot map back).

import { buildShadowsocksLink, shadowsocksShape } from "./shadowsocks.ts";
import type { LinkShape } from "./shape.ts";
import { buildTrojanLink, trojanShape } from "./trojan.ts";
import type { LinkTarget } from "./types.ts";
import { buildVlessLink, vlessShape } from "./vless.ts";
import { buildVmessLink, vmessShape } from "./vmess.ts";

export function buildLink(target: LinkTarget): string {
  switch (target.protocol) {
    case "vless":
      return buildVlessLink(target);
    case "vmess":
      return buildVmessLink(target);
    case "trojan":
      return buildTrojanLink(target);
    case "shadowsocks":
      return buildShadowsocksLink(target);
  }
}

/** The link of `target` around its secret: the id (VLESS, VMess) or the password (Trojan, Shadowsocks). */
export function linkShape(target: LinkTarget): LinkShape {
  switch (target.protocol) {
    case "vless":
      return vlessShape(target);
    case "vmess":
      return vmessShape(target);
    case "trojan":
      return trojanShape(target);
    case "shadowsocks":
      return shadowsocksShape(target);
  }
}

/** The links of one subscription, in order, with unique remarks. */
export function buildLinks(targets: readonly LinkTarget[]): string[] {
  const remarks = uniqueRemarks(targets.map((target) => target.remark));
  return targets.map((target, index) => buildLink({ ...target, remark: remarks[index] ?? target.remark }));
}

/**
 * The first use of a remark keeps it; later duplicates become "remark (2)", "remark (3)"…,
 * skipping any name that is already taken, so the result is unique and stable for a given order.
 */
export function uniqueRemarks(remarks: readonly string[]): string[] {
  const original = new Set(remarks);
  const used = new Set<string>();
  return remarks.map((remark) => {
    let name = remark;
    for (let n = 2; used.has(name) || (name !== remark && original.has(name)); n++) name = `${remark} (${n})`;
    used.add(name);
    return name;
  });
}
