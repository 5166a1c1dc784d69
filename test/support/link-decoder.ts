// An independent reader of share links, written from shared/reference/share-links.md and not from
// src/links, so that round-trip tests catch a builder and its own reader agreeing on a mistake.
// It reads as strictly as the least forgiving client (v2rayN's `k=v` splitter, Go's url package).
// link-client-configs.ts turns what it returns into configs for the real Debian clients.
import type {
  LinkTarget,
  Security,
  ShadowsocksTarget,
  TlsSecurity,
  Transport,
  VmessTarget,
} from "../../src/links/types.ts";
import type { XhttpClientExtra } from "../../src/protocols/xhttp.ts";

const FINGERPRINT_NAMES = [
  "chrome",
  "firefox",
  "safari",
  "ios",
  "android",
  "edge",
  "360",
  "qq",
  "random",
  "randomized",
] as const;
const AEAD = ["aes-128-gcm", "aes-256-gcm", "chacha20-ietf-poly1305"] as const;
const SS2022 = ["2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm"] as const;
// What encodeURIComponent may leave raw; anything else in a component is a client hazard.
const ESCAPED_COMPONENT = /^(?:[A-Za-z0-9\-_.!~*'()]|%[0-9A-Fa-f]{2})*$/;

export class LinkDecodeError extends Error {}

function fail(message: string): never {
  throw new LinkDecodeError(message);
}

/** Decode one component, refusing raw characters that some client would read differently. */
function component(raw: string, what: string): string {
  if (!ESCAPED_COMPONENT.test(raw)) fail(`${what} is not fully percent-escaped: ${raw}`);
  return decodeURIComponent(raw);
}

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  const found = allowed.find((item) => item === value);
  return found ?? fail(`${what} ${JSON.stringify(value)} is not one of ${allowed.join(", ")}`);
}

export function decodeLink(link: string): LinkTarget {
  const scheme = link.slice(0, link.indexOf("://"));
  switch (scheme) {
    case "vless":
      return decodeVless(link);
    case "vmess":
      return decodeVmess(link);
    case "trojan":
      return decodeTrojan(link);
    case "ss":
      return decodeShadowsocks(link);
    default:
      return fail(`unknown scheme in ${link}`);
  }
}

/** Query keys, read like v2rayN's ParseQueryString: each `&` piece splits into exactly two at `=`. */
class Params {
  private readonly values = new Map<string, string>();

  constructor(rawQuery: string) {
    if (rawQuery === "") return;
    for (const pair of rawQuery.split("&")) {
      const parts = pair.split("=");
      const [key, raw] = parts;
      if (parts.length !== 2 || key === undefined || raw === undefined || key === "")
        fail(`bad query pair ${pair}`);
      if (this.values.has(key)) fail(`query key ${key} appears twice`);
      const value = component(raw, `query value of ${key}`);
      if (value === "" && !["sid", "spx", "authority"].includes(key)) fail(`query key ${key} is empty`);
      this.values.set(key, value);
    }
  }

  take(key: string): string | undefined {
    const value = this.values.get(key);
    this.values.delete(key);
    return value;
  }

  need(key: string): string {
    return this.take(key) ?? fail(`query key ${key} is missing`);
  }

  /** Every key must have been understood: a stray key means the builder wrote something unplanned. */
  done(): void {
    if (this.values.size > 0) fail(`unexpected query keys: ${[...this.values.keys()].join(", ")}`);
  }
}

type UrlLink = { user: string; password: string; host: string; port: number; params: Params; remark: string };

function splitUrlLink(link: string): UrlLink {
  const hashAt = link.indexOf("#");
  if (hashAt < 0) fail("no #remark");
  const beforeHash = link.slice(0, hashAt);
  const queryAt = beforeHash.indexOf("?");
  const base = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  const url = URL.canParse(base) ? new URL(base) : fail(`not a URL: ${base}`);
  if (url.pathname !== "") fail(`unexpected path ${url.pathname}`);
  if (!/^\d+$/.test(url.port)) fail("the port is missing");
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return {
    user: url.username,
    password: url.password,
    host,
    port: Number(url.port),
    params: new Params(queryAt < 0 ? "" : beforeHash.slice(queryAt + 1)),
    remark: component(link.slice(hashAt + 1), "remark"),
  };
}

function decodeVless(link: string): LinkTarget {
  const { user, password, host, port, params, remark } = splitUrlLink(link);
  if (password !== "") fail("raw : in the vless id");
  const encryption = params.need("encryption");
  const securityType = params.need("security");
  const transport = urlTransport(params);
  const flow = params.take("flow");
  const security = urlSecurity(securityType, params);
  params.done();
  const credential = { id: component(user, "id"), encryption };
  if (flow !== undefined) Object.assign(credential, { flow: oneOf(flow, ["xtls-rprx-vision"], "flow") });
  return { protocol: "vless", host, port, remark, credential, transport, security };
}

function decodeTrojan(link: string): LinkTarget {
  const { user, password, host, port, params, remark } = splitUrlLink(link);
  if (password !== "") fail("raw : in the trojan password (Go keeps only the part before it)");
  const securityType = params.need("security");
  const transport = urlTransport(params);
  const security = urlSecurity(securityType, params);
  params.done();
  if (security.type === "reality") fail("trojan over REALITY is not produced");
  return {
    protocol: "trojan",
    host,
    port,
    remark,
    credential: { password: component(user, "password") },
    transport,
    security,
  };
}

function urlTransport(params: Params): Transport {
  const type = params.need("type");
  if (type === "tcp") {
    const headerType = oneOf(params.need("headerType"), ["none", "http"], "headerType");
    if (headerType === "none") return { type: "tcp" };
    return { type: "tcp", http: httpHeader(params.take("host"), params.take("path")) };
  }
  if (type === "ws" || type === "httpupgrade")
    return withOptional({ type }, { host: params.take("host"), path: params.take("path") });
  if (type === "grpc") {
    const mode = oneOf(params.need("mode"), ["gun", "multi"], "grpc mode");
    const grpc = { type: "grpc", serviceName: params.need("serviceName"), mode } as const;
    return withOptional(grpc, { authority: params.take("authority") });
  }
  if (type === "xhttp") {
    const mode = oneOf(params.need("mode"), ["auto", "packet-up", "stream-up", "stream-one"], "xhttp mode");
    const extra = params.take("extra");
    const xhttp = withOptional({ type: "xhttp", mode } as const, {
      host: params.take("host"),
      path: params.take("path"),
    });
    return extra === undefined ? xhttp : { ...xhttp, extra: xhttpExtra(extra) };
  }
  return fail(`transport type ${type} is not produced`);
}

const RANGE = /^\d+(-\d+)?$/;
const XMUX_KEYS = [
  "maxConcurrency",
  "maxConnections",
  "cMaxReuseTimes",
  "hMaxRequestTimes",
  "hMaxReusableSecs",
];

/** XHTTP `extra`: compact JSON of Xray's client keys only, ranges as "N" or "N-M" strings. */
function xhttpExtra(text: string): XhttpClientExtra {
  if (text !== JSON.stringify(JSON.parse(text))) fail("xhttp extra is not compact JSON");
  const json: unknown = JSON.parse(text);
  if (typeof json !== "object" || json === null || Array.isArray(json)) fail("xhttp extra is not an object");
  const allowed = [
    "headers",
    "xPaddingBytes",
    "noGRPCHeader",
    "scMaxEachPostBytes",
    "scMinPostsIntervalMs",
    "xmux",
  ];
  for (const [key, value] of Object.entries(json)) {
    if (!allowed.includes(key)) fail(`xhttp extra key ${key} is not a client setting`);
    if (["xPaddingBytes", "scMaxEachPostBytes", "scMinPostsIntervalMs"].includes(key)) {
      if (typeof value !== "string" || !RANGE.test(value)) fail(`xhttp extra ${key} is not a range string`);
    }
    if (key === "noGRPCHeader" && value !== true) fail("xhttp extra noGRPCHeader is written only as true");
    if (key === "headers" && !isStringRecord(value)) fail("xhttp extra headers are not strings");
    if (key === "xmux") checkXmux(value);
  }
  return json as XhttpClientExtra;
}

function isStringRecord(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((item) => typeof item === "string");
}

function checkXmux(value: unknown): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("xmux is not an object");
  for (const [key, item] of Object.entries(value)) {
    if (key === "hKeepAlivePeriod" && Number.isInteger(item)) continue;
    if (!XMUX_KEYS.includes(key) || typeof item !== "string" || !RANGE.test(item))
      fail(`xmux ${key} is not produced`);
  }
}

function httpHeader(
  host: string | undefined,
  path: string | undefined,
): { host?: string[]; path?: string[] } {
  return withOptional({}, { host: host?.split(","), path: path?.split(",") });
}

function urlSecurity(type: string, params: Params): Security {
  if (type === "none") return { type: "none" };
  if (type === "tls") {
    const insecure = [params.take("allowInsecure"), params.take("insecure")];
    if (insecure.some((v) => v !== undefined) && !insecure.every((v) => v === "1")) {
      fail("an insecure link says allowInsecure=1&insecure=1, nothing else");
    }
    const tls = tlsOptions(params.take("sni"), params.take("alpn"), params.take("fp"));
    return insecure[0] === "1" ? { ...tls, allowInsecure: true } : tls;
  }
  if (type === "reality") {
    const reality = {
      type: "reality",
      sni: params.need("sni"),
      fingerprint: oneOf(params.need("fp"), FINGERPRINT_NAMES, "fp"),
      publicKey: params.need("pbk"),
      shortId: params.need("sid"),
    } as const;
    return withOptional(reality, { spiderX: params.take("spx") });
  }
  return fail(`security ${type} is not produced`);
}

function tlsOptions(sni: string | undefined, alpn: string | undefined, fp: string | undefined): TlsSecurity {
  const fingerprint = fp === undefined ? undefined : oneOf(fp, FINGERPRINT_NAMES, "fp");
  return withOptional({ type: "tls" }, { sni, alpn: alpn?.split(","), fingerprint });
}

/** Adds only the fields that have a value, as a client would leave unset options unset. */
function withOptional<T extends object, O extends Record<string, unknown>>(base: T, optional: O): T {
  const present = Object.entries(optional).filter(([, value]) => value !== undefined);
  return { ...base, ...Object.fromEntries(present) };
}

const VMESS_KEYS = [
  "v",
  "ps",
  "add",
  "port",
  "id",
  "aid",
  "scy",
  "net",
  "type",
  "host",
  "path",
  "tls",
  "sni",
  "alpn",
  "fp",
];

function decodeVmess(link: string): VmessTarget {
  const payload = link.slice("vmess://".length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(payload)) fail("vmess payload is not standard base64 on one line");
  const json: unknown = JSON.parse(Buffer.from(payload, "base64").toString("utf8"));
  if (typeof json !== "object" || json === null) fail("vmess payload is not a JSON object");
  const fields = new Map(Object.entries(json));
  const text = (key: string): string => {
    const value = fields.get(key);
    return typeof value === "string" ? value : fail(`vmess ${key} is not a string`);
  };
  for (const key of VMESS_KEYS) text(key); // all present, all strings (mihomo skips an entry without ps)
  if (text("v") !== "2" || text("aid") !== "0") fail("vmess v must be 2 and aid 0");
  if (!/^\d+$/.test(text("port"))) fail("vmess port is not a decimal string");
  if (text("add").startsWith("[")) fail("vmess add carries IPv6 without brackets");
  // Never "auto": sing-box-based clients send it as written and Xray 26 refuses it.
  const cipher = oneOf(text("scy"), ["aes-128-gcm", "chacha20-poly1305"], "scy");
  const insecure = fields.get("insecure");
  if (insecure !== undefined && insecure !== "1") fail('vmess insecure is written only as "1"');
  return {
    protocol: "vmess",
    host: text("add"),
    port: Number(text("port")),
    remark: text("ps"),
    credential: { id: text("id"), cipher },
    transport: vmessTransport(text("net"), text("type"), text("host"), text("path")),
    security: vmessSecurity(text("tls"), text("sni"), text("alpn"), text("fp"), insecure === "1"),
  };
}

const nonEmpty = (value: string): string | undefined => (value === "" ? undefined : value);

function vmessTransport(net: string, type: string, host: string, path: string): Transport {
  if (net === "tcp" && type === "none" && host === "" && path === "") return { type: "tcp" };
  if (net === "tcp" && type === "http")
    return { type: "tcp", http: httpHeader(nonEmpty(host), nonEmpty(path)) };
  if ((net === "ws" || net === "httpupgrade") && type === "none") {
    return withOptional({ type: net }, { host: nonEmpty(host), path: nonEmpty(path) });
  }
  if (net === "grpc" && path !== "") {
    const grpc = {
      type: "grpc",
      serviceName: path,
      mode: oneOf(type, ["gun", "multi"], "grpc mode"),
    } as const;
    return withOptional(grpc, { authority: nonEmpty(host) });
  }
  if (net === "xhttp") {
    const mode = oneOf(type, ["auto", "packet-up", "stream-up", "stream-one"], "xhttp mode");
    return withOptional({ type: "xhttp", mode } as const, { host: nonEmpty(host), path: nonEmpty(path) });
  }
  return fail(`vmess net=${net} type=${type} host=${host} path=${path} is not produced`);
}

function vmessSecurity(
  tls: string,
  sni: string,
  alpn: string,
  fp: string,
  isInsecure: boolean,
): VmessTarget["security"] {
  if (tls === "" && sni === "" && alpn === "" && fp === "" && !isInsecure) return { type: "none" };
  if (tls !== "tls") fail(`vmess tls=${tls} with TLS options`);
  const options = tlsOptions(nonEmpty(sni), nonEmpty(alpn), nonEmpty(fp));
  return isInsecure ? { ...options, allowInsecure: true } : options;
}

function decodeShadowsocks(link: string): ShadowsocksTarget {
  const { user, password, host, port, params, remark } = splitUrlLink(link);
  params.done(); // no plugin, so no query at all
  if (password !== "") {
    // SIP022: method and key percent-escaped, never base64.
    const method = oneOf(component(user, "method"), SS2022, "2022 method");
    return {
      protocol: "shadowsocks",
      host,
      port,
      remark,
      credential: { method, password: component(password, "key") },
    };
  }
  if (!/^[A-Za-z0-9_-]+$/.test(user)) fail("ss userinfo is not unpadded base64url");
  const plain = Buffer.from(user, "base64url").toString("utf8");
  const colon = plain.indexOf(":");
  if (colon < 0) fail("ss userinfo has no method:password");
  const linkMethod = oneOf(plain.slice(0, colon), AEAD, "AEAD method");
  // Links carry SIP002's name of the cipher Xray (and LinkTarget) call chacha20-poly1305.
  const method = linkMethod === "chacha20-ietf-poly1305" ? "chacha20-poly1305" : linkMethod;
  return {
    protocol: "shadowsocks",
    host,
    port,
    remark,
    credential: { method, password: plain.slice(colon + 1) },
  };
}

/**
 * Where a link breaks the escaping rules of share-links.md §0: raw `+`, space, `=`, `&` or a bad
 * `%` inside a query value or the fragment, a bare or empty key, or a non-standard vmess payload.
 */
export function escapingProblems(link: string): string[] {
  if (link.startsWith("vmess://")) {
    return /^[A-Za-z0-9+/]+={0,2}$/.test(link.slice(8)) ? [] : ["vmess payload is not standard base64"];
  }
  const problems: string[] = [];
  const hashAt = link.indexOf("#");
  const rest = hashAt < 0 ? link : link.slice(0, hashAt);
  if (hashAt >= 0) problems.push(...rawCharacters("fragment", link.slice(hashAt + 1)));
  const queryAt = rest.indexOf("?");
  if (queryAt >= 0) {
    for (const pair of rest.slice(queryAt + 1).split("&")) {
      const [key = "", ...values] = pair.split("=");
      if (values.length !== 1) problems.push(`pair "${pair}" does not split into key=value`);
      problems.push(...rawCharacters(`value of ${key}`, values.join("=")));
    }
  }
  return problems;
}

function rawCharacters(where: string, raw: string): string[] {
  const problems = [...raw.matchAll(/[+ =&#]/g)].map((m) => `raw ${JSON.stringify(m[0])} in ${where}`);
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) problems.push(`malformed % escape in ${where}`);
  return problems;
}
