// vmess:// links in v2rayN's "ver 2" JSON form, the only VMess form NekoRay and every other
// client read. Every key is a JSON string and always present (mihomo skips entries without `ps`).
import { fillShape, type LinkShape } from "./shape.ts";
import type { Transport, VmessTarget } from "./types.ts";
import { checkPort, InvalidLinkTargetError, joinList, linkHost } from "./uri.ts";

type VmessStream = { net: string; type: string; host: string; path: string };

export function buildVmessLink(target: VmessTarget): string {
  return fillShape(vmessShape(target), target.credential.id);
}

// Stands for the id while the JSON is written once; JSON writes it as \u0000, which nothing else has.
const ID_MARK = "\u0000";
const ID_MARK_JSON = JSON.stringify(ID_MARK).slice(1, -1);

/** The whole link is base64, so the shape is the JSON around the id; each user's link is encoded whole. */
export function vmessShape(target: VmessTarget): LinkShape {
  const text = vmessJson({ ...target, credential: { ...target.credential, id: ID_MARK } });
  const at = text.indexOf(ID_MARK_JSON);
  const isSingle = at >= 0 && text.indexOf(ID_MARK_JSON, at + 1) < 0;
  const before = isSingle ? text.slice(0, at) : "";
  const after = isSingle ? text.slice(at + ID_MARK_JSON.length) : "";
  const json = isSingle
    ? (id: string) => before + JSON.stringify(id).slice(1, -1) + after
    : (id: string) => vmessJson({ ...target, credential: { ...target.credential, id } });
  // Standard alphabet: mihomo's decoder does not read URL-safe base64.
  return { head: "vmess://", tail: "", secret: (id) => Buffer.from(json(id), "utf8").toString("base64") };
}

function vmessJson(target: VmessTarget): string {
  const { credential, security } = target;
  const tls = security.type === "tls" ? security : undefined;
  const json: Record<string, string> = {
    v: "2",
    ps: target.remark,
    add: linkHost(target.host), // bare IPv6: no brackets inside the JSON
    port: String(checkPort(target.port)),
    id: credential.id,
    aid: "0", // AEAD header; legacy alterId > 0 is gone from Xray
    scy: credential.cipher,
    ...vmessStream(target.transport),
    tls: tls ? "tls" : "",
    sni: tls?.sni ?? "",
    alpn: joinList("alpn", tls?.alpn) ?? "",
    fp: tls?.fingerprint ?? "",
  };
  if (tls?.allowInsecure === true) json.insecure = "1";
  return JSON.stringify(json);
}

/** v2rayN's per-network meaning of `type`, `host` and `path`. */
function vmessStream(transport: Transport): VmessStream {
  switch (transport.type) {
    case "tcp":
      return {
        net: "tcp",
        type: transport.http ? "http" : "none",
        host: joinList("tcp http host", transport.http?.host) ?? "",
        path: joinList("tcp http path", transport.http?.path) ?? "",
      };
    case "ws":
    case "httpupgrade":
      return { net: transport.type, type: "none", host: transport.host ?? "", path: transport.path ?? "" };
    case "grpc":
      if (transport.serviceName === "") throw new InvalidLinkTargetError("grpc serviceName is empty");
      return {
        net: "grpc",
        type: transport.mode,
        host: transport.authority ?? "",
        path: transport.serviceName,
      };
    case "xhttp":
      // v2rayN reads the mode from `type`; its ver-2 JSON has no key for extra (others ignore one).
      if (transport.extra !== undefined) {
        throw new InvalidLinkTargetError(
          "a vmess:// link has no key for XHTTP extra settings that clients read (use VLESS, or xray-json)",
        );
      }
      return { net: "xhttp", type: transport.mode, host: transport.host ?? "", path: transport.path ?? "" };
  }
}
