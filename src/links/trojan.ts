// trojan:// links in the Xray-era form: trojan-gfw's `password@host:port` plus the same query keys
// as vless. `security` is always written: libXray and NekoRay assume tls when it is missing.
import { fillShape, type LinkShape } from "./shape.ts";
import { securityParams, transportParams } from "./stream-params.ts";
import type { TrojanTarget } from "./types.ts";
import { authority, escapeComponent, fragment, InvalidLinkTargetError, queryString } from "./uri.ts";

export function buildTrojanLink(target: TrojanTarget): string {
  return fillShape(trojanShape(target), target.credential.password);
}

/** Everything but the password, which is the secret. */
export function trojanShape(target: TrojanTarget): LinkShape {
  const { transport, security } = target;
  const query = queryString([
    ["security", security.type],
    ...transportParams(transport),
    ...securityParams(security),
  ]);
  const tail = `@${authority(target.host, target.port)}${query}${fragment(target.remark)}`;
  return { head: "trojan://", tail, secret: trojanPassword };
}

function trojanPassword(password: string): string {
  if (password === "") throw new InvalidLinkTargetError("trojan password is empty");
  // escapeComponent also escapes `:`, which Go (mihomo) would otherwise take as the user/password split.
  return escapeComponent(password);
}
