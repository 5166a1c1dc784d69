// vless:// links per the XTLS share-link proposal (#91, revised as #716). `encryption`,
// `security` and `type` are always written because clients disagree on their defaults.
import { fillShape, type LinkShape } from "./shape.ts";
import { securityParams, transportParams } from "./stream-params.ts";
import type { VlessTarget } from "./types.ts";
import { authority, escapeComponent, fragment, InvalidLinkTargetError, queryString } from "./uri.ts";

export function buildVlessLink(target: VlessTarget): string {
  return fillShape(vlessShape(target), target.credential.id);
}

/** Everything but the user's id, which is the secret. */
export function vlessShape(target: VlessTarget): LinkShape {
  const { credential, transport, security } = target;
  if (security.type === "reality" && (transport.type === "ws" || transport.type === "httpupgrade")) {
    throw new InvalidLinkTargetError(`REALITY does not run over ${transport.type}`);
  }
  if (credential.encryption === "") throw new InvalidLinkTargetError("vless encryption is empty (use none)");
  const query = queryString([
    ["encryption", credential.encryption],
    ["security", security.type],
    ...transportParams(transport),
    ["flow", visionApplies(target) ? credential.flow : undefined],
    ...securityParams(security),
  ]);
  const tail = `@${authority(target.host, target.port)}${query}${fragment(target.remark)}`;
  return { head: "vless://", tail, secret: escapeComponent };
}

/** Vision needs raw TCP without header obfuscation under TLS or REALITY; elsewhere the key is left out. */
function visionApplies({ transport, security }: VlessTarget): boolean {
  return transport.type === "tcp" && transport.http === undefined && security.type !== "none";
}
