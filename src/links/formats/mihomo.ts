// mihomo (Clash Meta) YAML: `proxies` from the entries, the operator's base document around them
// (DNS, groups, rules), and in every proxy group's list the placeholder {{all}} replaced by every
// proxy's name. What mihomo cannot express is left out and listed in a comment at the top, never
// written half-broken; a group never names a proxy that is not in `proxies` (Gozargah/Marzban#1356).
import type { XhttpClientExtra } from "../../protocols/xhttp.ts";
import type { LinkTarget, Transport, XhttpTransport } from "../types.ts";
import {
  type LeftOut,
  NOTHING_FOR_THIS_APP,
  NOTHING_TO_CONNECT,
  namedTargets,
  placeholderTarget,
  type RenderedFormat,
  type SubscriptionEntry,
} from "./entries.ts";
import { toYaml, type YamlValue } from "./yaml.ts";

type Yaml = { [key: string]: YamlValue };

/** Where a group's list takes every generated proxy's name. */
export const ALL_PROXIES = "{{all}}";

export const DEFAULT_MIHOMO_BASE = `# Portcullis: the document every mihomo subscription is built from.
# The users' proxies are added to \`proxies\`; "{{all}}" in a group's list stands for all of them.
mixed-port: 7890
allow-lan: false
mode: rule
log-level: warning
ipv6: true
dns:
  enable: true
  ipv6: true
  enhanced-mode: fake-ip
  fake-ip-range: 198.18.0.1/16
  default-nameserver:
    - 1.1.1.1
    - 8.8.8.8
  nameserver:
    - https://1.1.1.1/dns-query
    - https://dns.google/dns-query
proxies: []
proxy-groups:
  - name: Proxy
    type: select
    proxies:
      - Auto
      - "{{all}}"
  - name: Auto
    type: url-test
    url: https://www.gstatic.com/generate_204
    interval: 300
    tolerance: 50
    proxies:
      - "{{all}}"
rules:
  - IP-CIDR,127.0.0.0/8,DIRECT,no-resolve
  - IP-CIDR,10.0.0.0/8,DIRECT,no-resolve
  - IP-CIDR,172.16.0.0/12,DIRECT,no-resolve
  - IP-CIDR,192.168.0.0/16,DIRECT,no-resolve
  - MATCH,Proxy
`;

/** One proxy entry, or why mihomo cannot express the target. */
export function mihomoProxy(target: LinkTarget, name: string): Yaml | string {
  const base: Yaml = { name, type: "", server: target.host, port: target.port, udp: true };
  switch (target.protocol) {
    case "shadowsocks":
      return {
        ...base,
        type: "ss",
        cipher: ssCipher(target.credential.method),
        password: target.credential.password,
      };
    case "vless": {
      if (target.credential.encryption !== "none")
        return "VLESS Encryption is not in mihomo's proxy format here";
      const flow: Yaml =
        target.credential.flow !== undefined && visionApplies(target) ? { flow: target.credential.flow } : {};
      const stream = streamOf(target);
      if (typeof stream === "string") return stream;
      return { ...base, type: "vless", uuid: target.credential.id, ...flow, ...stream };
    }
    case "vmess": {
      const stream = streamOf(target);
      if (typeof stream === "string") return stream;
      return {
        ...base,
        type: "vmess",
        uuid: target.credential.id,
        alterId: 0,
        cipher: target.credential.cipher,
        ...stream,
      };
    }
    case "trojan": {
      if (target.security.type === "none") return "mihomo's trojan always speaks TLS; this inbound has none";
      const stream = streamOf(target);
      if (typeof stream === "string") return stream;
      return { ...base, type: "trojan", password: target.credential.password, ...stream };
    }
  }
}

function ssCipher(method: string): string {
  return method === "chacha20-poly1305" ? "chacha20-ietf-poly1305" : method;
}

function visionApplies(target: LinkTarget & { protocol: "vless" }): boolean {
  const { transport, security } = target;
  return transport.type === "tcp" && transport.http === undefined && security.type !== "none";
}

/** TLS/REALITY and transport keys of a vless, vmess or trojan proxy. */
function streamOf(target: Exclude<LinkTarget, { protocol: "shadowsocks" }>): Yaml | string {
  const out: Yaml = {};
  const { security } = target;
  const serverNameKey = target.protocol === "trojan" ? "sni" : "servername";
  if (security.type === "tls") {
    if (target.protocol !== "trojan") out.tls = true;
    if (security.sni !== undefined) out[serverNameKey] = security.sni;
    if (security.alpn !== undefined) out.alpn = security.alpn;
    if (security.fingerprint !== undefined) out["client-fingerprint"] = security.fingerprint;
    if (security.allowInsecure === true) out["skip-cert-verify"] = true;
  } else if (security.type === "reality") {
    out.tls = true;
    out[serverNameKey] = security.sni;
    out["client-fingerprint"] = security.fingerprint;
    out["reality-opts"] = { "public-key": security.publicKey, "short-id": security.shortId };
  }
  const transport = transportOf(target.transport, target.protocol);
  if (typeof transport === "string") return transport;
  // mihomo speaks plain-text XHTTP only over HTTP/1.1, and only when told so (MetaCubeX/mihomo#2973).
  if (target.transport.type === "xhttp" && security.type === "none") out.alpn = ["http/1.1"];
  return { ...transport, ...out };
}

function transportOf(transport: Transport, protocol: string): Yaml | string {
  switch (transport.type) {
    case "tcp": {
      if (transport.http === undefined) return { network: "tcp" };
      if (protocol === "trojan") return "mihomo's trojan has no HTTP header obfuscation over TCP";
      const headers: Yaml =
        transport.http.host === undefined ? {} : { headers: { Host: transport.http.host } };
      return {
        network: "http",
        "http-opts": { method: "GET", path: transport.http.path ?? ["/"], ...headers },
      };
    }
    case "ws":
    case "httpupgrade": {
      const headers: Yaml = transport.host === undefined ? {} : { headers: { Host: transport.host } };
      const upgrade: Yaml = transport.type === "httpupgrade" ? { "v2ray-http-upgrade": true } : {};
      return { network: "ws", "ws-opts": { path: transport.path ?? "/", ...headers, ...upgrade } };
    }
    case "grpc":
      if (transport.authority !== undefined) return "mihomo's gRPC options have no authority";
      return { network: "grpc", "grpc-opts": { "grpc-service-name": transport.serviceName } };
    case "xhttp":
      if (protocol !== "vless") return "mihomo carries XHTTP for VLESS only";
      return { network: "xhttp", "xhttp-opts": xhttpOpts(transport) };
  }
}

/** mihomo's xhttp-opts: Xray's keys in kebab case, xmux as reuse-settings (meta-json-schema 1.19.24). */
function xhttpOpts(transport: XhttpTransport): Yaml {
  const extra: XhttpClientExtra = transport.extra ?? {};
  const opts: Yaml = { path: transport.path ?? "/" };
  if (transport.host !== undefined) opts.host = transport.host;
  if (transport.mode !== "auto") opts.mode = transport.mode;
  if (extra.headers !== undefined) opts.headers = extra.headers;
  if (extra.noGRPCHeader === true) opts["no-grpc-header"] = true;
  if (extra.xPaddingBytes !== undefined) opts["x-padding-bytes"] = extra.xPaddingBytes;
  if (extra.scMaxEachPostBytes !== undefined) opts["sc-max-each-post-bytes"] = extra.scMaxEachPostBytes;
  if (extra.scMinPostsIntervalMs !== undefined) opts["sc-min-posts-interval-ms"] = extra.scMinPostsIntervalMs;
  const xmux = extra.xmux;
  if (xmux !== undefined) {
    const reuse: Yaml = {};
    if (xmux.maxConcurrency !== undefined) reuse["max-concurrency"] = xmux.maxConcurrency;
    if (xmux.maxConnections !== undefined) reuse["max-connections"] = xmux.maxConnections;
    if (xmux.cMaxReuseTimes !== undefined) reuse["c-max-reuse-times"] = xmux.cMaxReuseTimes;
    if (xmux.hMaxRequestTimes !== undefined) reuse["h-max-request-times"] = xmux.hMaxRequestTimes;
    if (xmux.hMaxReusableSecs !== undefined) reuse["h-max-reusable-secs"] = xmux.hMaxReusableSecs;
    if (xmux.hKeepAlivePeriod !== undefined) reuse["h-keep-alive-period"] = xmux.hKeepAlivePeriod;
    opts["reuse-settings"] = reuse;
  }
  return opts;
}

/** The base document as parsed (a mapping); the default when the operator set none. */
export function renderMihomo(entries: readonly SubscriptionEntry[], base: Yaml): RenderedFormat {
  const leftOut: LeftOut[] = [];
  const proxies: Yaml[] = [];
  const list = entries.length === 0 ? [{ kind: "placeholder" as const, text: NOTHING_TO_CONNECT }] : entries;
  for (const { name, target } of namedTargets(list)) {
    const proxy = mihomoProxy(target, name);
    if (typeof proxy === "string") leftOut.push({ name, reason: proxy });
    else proxies.push(proxy);
  }
  if (proxies.length === 0)
    proxies.push(mihomoProxy(placeholderTarget(NOTHING_FOR_THIS_APP), NOTHING_FOR_THIS_APP) as Yaml);
  const names = proxies.map((proxy) => proxy.name as string);
  const doc: Yaml = {};
  let placed = false;
  const own = Array.isArray(base.proxies) ? (base.proxies as YamlValue[]) : [];
  for (const [key, value] of Object.entries(base)) {
    if (key === "proxy-groups" && !placed) {
      doc.proxies = [...own, ...proxies];
      placed = true;
    }
    if (key === "proxies") {
      doc.proxies = [...own, ...proxies];
      placed = true;
    } else if (key === "proxy-groups" && Array.isArray(value))
      doc[key] = value.map((group) => expandGroup(group, names));
    else doc[key] = value;
  }
  if (!placed) doc.proxies = [...own, ...proxies];
  const comments = leftOut.map((item) => `left out: ${item.name}: ${item.reason}`);
  return { body: toYaml(doc, comments), leftOut };
}

function expandGroup(group: YamlValue, names: readonly string[]): YamlValue {
  if (group === null || typeof group !== "object" || Array.isArray(group) || !Array.isArray(group.proxies))
    return group;
  const proxies = group.proxies.flatMap((item) => (item === ALL_PROXIES ? [...names] : [item]));
  return { ...group, proxies };
}
