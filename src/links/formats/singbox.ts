// sing-box JSON (1.12 and later): the operator's base document with the entries' outbounds added to
// `outbounds`, and "{{all}}" in a selector's or urltest's `outbounds` replaced by every generated
// tag. No deprecated special outbounds (block, dns): the default document routes with rule actions.
// What sing-box cannot express is left out and logged by the caller (JSON has no comments, and
// sing-box refuses unknown keys).
import type { LinkTarget, Transport } from "../types.ts";
import {
  ietfMethod,
  type LeftOut,
  NOTHING_FOR_THIS_APP,
  NOTHING_TO_CONNECT,
  namedTargets,
  placeholderTarget,
  type RenderedFormat,
  type SubscriptionEntry,
} from "./entries.ts";
import { ALL_PROXIES } from "./mihomo.ts";

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export const DEFAULT_SINGBOX_BASE: JsonObject = {
  log: { level: "warn", timestamp: true },
  dns: {
    servers: [
      { type: "https", tag: "dns-remote", server: "1.1.1.1", detour: "Proxy" },
      { type: "local", tag: "dns-local" },
    ],
    final: "dns-remote",
    strategy: "prefer_ipv4",
  },
  inbounds: [
    {
      type: "tun",
      tag: "tun-in",
      address: ["172.19.0.1/30", "fdfe:dcba:9876::1/126"],
      auto_route: true,
      strict_route: true,
    },
    { type: "mixed", tag: "mixed-in", listen: "127.0.0.1", listen_port: 2080 },
  ],
  outbounds: [
    { type: "selector", tag: "Proxy", outbounds: ["Auto", ALL_PROXIES], interrupt_exist_connections: true },
    {
      type: "urltest",
      tag: "Auto",
      outbounds: [ALL_PROXIES],
      url: "https://www.gstatic.com/generate_204",
      interval: "5m",
    },
    { type: "direct", tag: "direct" },
  ],
  route: {
    rules: [
      { action: "sniff" },
      { protocol: "dns", action: "hijack-dns" },
      { ip_is_private: true, outbound: "direct" },
    ],
    final: "Proxy",
    auto_detect_interface: true,
    default_domain_resolver: "dns-local",
  },
};

/** One outbound, or why sing-box cannot express the target. */
export function singboxOutbound(target: LinkTarget, tag: string): JsonObject | string {
  const base: JsonObject = { type: target.protocol, tag, server: target.host, server_port: target.port };
  if (target.protocol === "shadowsocks") {
    return { ...base, method: ietfMethod(target.credential.method), password: target.credential.password };
  }
  const transport = transportOf(target.transport);
  if (typeof transport === "string") return transport;
  const tls = tlsOf(target);
  const stream: JsonObject = {
    ...(tls === undefined ? {} : { tls }),
    ...(transport === undefined ? {} : { transport }),
  };
  switch (target.protocol) {
    case "vless": {
      if (target.credential.encryption !== "none") return "VLESS Encryption is not in sing-box";
      const { transport: t, security } = target;
      const vision =
        target.credential.flow !== undefined &&
        t.type === "tcp" &&
        t.http === undefined &&
        security.type !== "none";
      return {
        ...base,
        uuid: target.credential.id,
        ...(vision ? { flow: target.credential.flow as string } : {}),
        ...stream,
      };
    }
    case "vmess":
      return {
        ...base,
        uuid: target.credential.id,
        security: target.credential.cipher,
        alter_id: 0,
        ...stream,
      };
    case "trojan":
      return { ...base, password: target.credential.password, ...stream };
  }
}

function tlsOf(target: Exclude<LinkTarget, { protocol: "shadowsocks" }>): JsonObject | undefined {
  const { security } = target;
  if (security.type === "none") return undefined;
  if (security.type === "reality") {
    return {
      enabled: true,
      server_name: security.sni,
      utls: { enabled: true, fingerprint: security.fingerprint },
      reality: { enabled: true, public_key: security.publicKey, short_id: security.shortId },
    };
  }
  return {
    enabled: true,
    ...(security.sni === undefined ? {} : { server_name: security.sni }),
    ...(security.allowInsecure === true ? { insecure: true } : {}),
    ...(security.alpn === undefined ? {} : { alpn: security.alpn }),
    ...(security.fingerprint === undefined
      ? {}
      : { utls: { enabled: true, fingerprint: security.fingerprint } }),
    ...(target.dialer?.fragment === undefined ? {} : { fragment: true }),
  };
}

function transportOf(transport: Transport): JsonObject | undefined | string {
  switch (transport.type) {
    case "tcp":
      return transport.http === undefined ? undefined : "sing-box has no HTTP header obfuscation over TCP";
    case "ws":
      return {
        type: "ws",
        path: transport.path ?? "/",
        ...(transport.host === undefined ? {} : { headers: { Host: transport.host } }),
      };
    case "httpupgrade":
      return {
        type: "httpupgrade",
        path: transport.path ?? "/",
        ...(transport.host === undefined ? {} : { host: transport.host }),
      };
    case "grpc":
      if (transport.authority !== undefined) return "sing-box's gRPC transport has no authority";
      return { type: "grpc", service_name: transport.serviceName };
    case "xhttp":
      return "sing-box has no XHTTP transport";
  }
}

export function renderSingbox(entries: readonly SubscriptionEntry[], base: JsonObject): RenderedFormat {
  const leftOut: LeftOut[] = [];
  const outbounds: JsonObject[] = [];
  const list = entries.length === 0 ? [{ kind: "placeholder" as const, text: NOTHING_TO_CONNECT }] : entries;
  for (const { name, target } of namedTargets(list)) {
    const outbound = singboxOutbound(target, name);
    if (typeof outbound === "string") leftOut.push({ name, reason: outbound });
    else outbounds.push(outbound);
  }
  if (outbounds.length === 0) {
    outbounds.push(
      singboxOutbound(placeholderTarget(NOTHING_FOR_THIS_APP), NOTHING_FOR_THIS_APP) as JsonObject,
    );
  }
  const tags = outbounds.map((outbound) => outbound.tag as string);
  const own = Array.isArray(base.outbounds) ? base.outbounds : [];
  const doc: JsonObject = { ...base, outbounds: [...own.map((o) => expandGroup(o, tags)), ...outbounds] };
  return { body: `${JSON.stringify(doc, null, 2)}\n`, leftOut };
}

function expandGroup(outbound: Json, tags: readonly string[]): Json {
  if (outbound === null || typeof outbound !== "object" || Array.isArray(outbound)) return outbound;
  if (outbound.type !== "selector" && outbound.type !== "urltest") return outbound;
  if (!Array.isArray(outbound.outbounds)) return outbound;
  return {
    ...outbound,
    outbounds: outbound.outbounds.flatMap((item) => (item === ALL_PROXIES ? [...tags] : [item])),
  };
}
