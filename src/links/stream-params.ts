// Transport and security query keys shared by vless:// and trojan:// (XTLS proposal #91/#716),
// in one place so both protocols describe a stream identically.
import type { RealitySecurity, Security, TlsSecurity, Transport } from "./types.ts";
import { InvalidLinkTargetError, joinList, type QueryPair } from "./uri.ts";

/** `type` plus the keys of that transport. tcp always says `headerType` (mihomo builds http-opts without it). */
export function transportParams(transport: Transport): QueryPair[] {
  switch (transport.type) {
    case "tcp":
      return [
        ["type", "tcp"],
        ["headerType", transport.http ? "http" : "none"],
        ["host", joinList("tcp http host", transport.http?.host)],
        ["path", joinList("tcp http path", transport.http?.path)],
      ];
    case "ws":
    case "httpupgrade":
      return [
        ["type", transport.type],
        ["host", transport.host],
        ["path", transport.path],
      ];
    case "grpc":
      if (transport.serviceName === "") throw new InvalidLinkTargetError("grpc serviceName is empty");
      return [
        ["type", "grpc"],
        ["serviceName", transport.serviceName],
        ["mode", transport.mode],
        ["authority", transport.authority],
      ];
    case "xhttp":
      // v2rayN and the XTLS proposal: `extra` is the compact JSON of Xray's xhttpSettings.extra.
      return [
        ["type", "xhttp"],
        ["host", transport.host],
        ["path", transport.path],
        ["mode", transport.mode],
        ["extra", transport.extra === undefined ? undefined : JSON.stringify(transport.extra)],
      ];
  }
}

/** The keys after `security=`: TLS options or the REALITY parameters. */
export function securityParams(security: Security): QueryPair[] {
  switch (security.type) {
    case "none":
      return [];
    case "tls":
      return tlsParams(security);
    case "reality":
      return realityParams(security);
  }
}

function tlsParams(tls: TlsSecurity): QueryPair[] {
  // Never `allowInsecure=0`: NekoRay reads any non-empty value as true. v2rayN writes both spellings.
  const insecure = tls.allowInsecure === true ? "1" : undefined;
  return [
    ["sni", tls.sni],
    ["fp", tls.fingerprint],
    ["alpn", joinList("alpn", tls.alpn)],
    ["allowInsecure", insecure],
    ["insecure", insecure],
  ];
}

const REALITY_PUBLIC_KEY = /^[A-Za-z0-9_-]{43}$/;
const REALITY_SHORT_ID = /^([0-9a-fA-F]{2}){0,8}$/;

function realityParams(reality: RealitySecurity): QueryPair[] {
  if (!REALITY_PUBLIC_KEY.test(reality.publicKey)) {
    throw new InvalidLinkTargetError("REALITY publicKey must be 43 characters of base64url");
  }
  if (!REALITY_SHORT_ID.test(reality.shortId)) {
    throw new InvalidLinkTargetError("REALITY shortId must be hex of even length, at most 16 characters");
  }
  if (reality.sni === "")
    throw new InvalidLinkTargetError("REALITY needs an sni (one of the server's serverNames)");
  return [
    ["sni", reality.sni],
    ["fp", reality.fingerprint],
    ["pbk", reality.publicKey],
    ["sid", reality.shortId],
    ["spx", reality.spiderX],
  ];
}
