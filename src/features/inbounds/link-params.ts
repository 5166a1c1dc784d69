// What a share link to an inbound says apart from the user's credential. Computed from the rendered
// template whenever the inbound, its template, its server or its certificate changes and stored on
// the inbound, so a subscription renders from one indexed read without templates or decryption.
import type { CoreProtocol } from "../../cores/core-types.ts";
import type { JsonObject, JsonValue } from "../../lib/json.ts";
import { linkShape } from "../../links/build.ts";
import type { LinkShape } from "../../links/shape.ts";
import {
  type Dialer,
  FINGERPRINTS,
  type Fingerprint,
  type LinkTarget,
  type Security,
  type Transport,
  VMESS_CIPHER,
} from "../../links/types.ts";
import { InvalidLinkTargetError } from "../../links/uri.ts";
import {
  isShadowsocks2022,
  normaliseShadowsocksMethod,
  type ShadowsocksMethod,
} from "../../protocols/shadowsocks.ts";
import { normaliseNetwork } from "../../protocols/streams.ts";
import { VLESS_VISION_FLOW, type VlessFlow } from "../../protocols/vless.ts";
import { xhttpClientExtra, xhttpMode } from "../../protocols/xhttp.ts";
import { objectAt } from "../templates/definition.ts";
import { realityPublicKey } from "../templates/reality.ts";
import type { HostFormat, HostFragment, HostMux, HostNoise, InboundHosts } from "./host-spec.ts";

export type LinkParams = {
  version: 1;
  protocol: CoreProtocol;
  /** The server's hostname. */
  host: string;
  /** The inbound's port. */
  port: number;
  /** `<server name> <inbound tag>`; buildLinks makes it unique within one list. */
  remark: string;
  transport: Transport;
  security: Security;
  /** VLESS: the client side of the inbound's `decryption`. */
  vlessEncryption?: string;
  vlessFlow?: VlessFlow;
  shadowsocksMethod?: ShadowsocksMethod;
  /** Shadowsocks 2022: the inbound's server key; a user's link password is `serverKey:userKey`. */
  shadowsocksServerKey?: string;
  /**
   * The inbound's hosts (issue 48), attached when subscriptions read the inbound, never stored with
   * it: undefined = no hosts, the one implicit host of these parameters (host-entries.ts).
   */
  hosts?: InboundHosts;
  /** An entry made from a host: the formats it is left out of. */
  excludeFrom?: readonly HostFormat[];
  /** An entry made from a host whose remark has per-user variables: filled per user. */
  userRemark?: true;
  /** An entry made from a host: what the formats that carry them write (xray-json). */
  mux?: HostMux;
  fragment?: HostFragment;
  noise?: readonly HostNoise[];
};

export type LinkParamsInput = {
  /** The inbound as rendered from its template (variables and built-ins substituted). */
  json: JsonObject;
  protocol: CoreProtocol;
  clientFlow: string;
  server: { name: string; hostname: string };
  tag: string;
  port: number;
  /** The domain of the inbound's certificate, if it has one. */
  certificateDomain?: string;
};

export function computeLinkParams(input: LinkParamsInput): LinkParams {
  const stream = objectAt(input.json.streamSettings);
  const domain = linkDomain([input.certificateDomain], input.server.hostname);
  const params: LinkParams = {
    version: 1,
    protocol: input.protocol,
    host: input.server.hostname,
    port: input.port,
    remark: `${input.server.name} ${input.tag}`,
    transport: transportOf(stream, domain),
    security: securityOf(stream, domain, input.server.hostname),
  };
  const settings = objectAt(input.json.settings);
  if (input.protocol === "vless") {
    params.vlessEncryption = text(settings?.decryption) ?? "none";
    if (input.clientFlow === VLESS_VISION_FLOW) params.vlessFlow = VLESS_VISION_FLOW;
  }
  if (input.protocol === "shadowsocks") {
    const method = normaliseShadowsocksMethod(text(settings?.method) ?? "");
    if (method !== undefined) params.shadowsocksMethod = method;
    const serverKey = text(settings?.password);
    if (isShadowsocks2022(method) && serverKey !== undefined) params.shadowsocksServerKey = serverKey;
  }
  return params;
}

/** The link of one user: the inbound's parameters plus the grant's credential. */
export function linkTargetOf(params: LinkParams, credential: string): LinkTarget {
  const endpoint = { host: params.host, port: params.port, remark: params.remark, ...dialerOf(params) };
  const { transport, security } = params;
  switch (params.protocol) {
    case "vless": {
      const flow = params.vlessFlow === undefined ? {} : { flow: params.vlessFlow };
      const user = { id: credential, encryption: params.vlessEncryption ?? "none", ...flow };
      return { protocol: "vless", ...endpoint, credential: user, transport, security };
    }
    case "vmess":
      return {
        protocol: "vmess",
        ...endpoint,
        credential: { id: credential, cipher: VMESS_CIPHER },
        transport,
        security: withoutReality(security),
      };
    case "trojan":
      return {
        protocol: "trojan",
        ...endpoint,
        credential: { password: credential },
        transport,
        security: withoutReality(security),
      };
    case "shadowsocks": {
      const method = params.shadowsocksMethod;
      if (method === undefined) throw new InvalidLinkTargetError("the inbound has no shadowsocks method");
      const key = params.shadowsocksServerKey;
      const password = key === undefined ? credential : `${key}:${credential}`;
      return { protocol: "shadowsocks", ...endpoint, credential: { method, password } };
    }
  }
}

/** A host's mux, fragment and noise as the formats read them; nothing when the entry has none. */
function dialerOf(params: LinkParams): { dialer?: Dialer } {
  if (params.mux === undefined && params.fragment === undefined && params.noise === undefined) return {};
  const dialer: Dialer = {};
  if (params.mux !== undefined) dialer.mux = params.mux;
  if (params.fragment !== undefined) dialer.fragment = params.fragment;
  if (params.noise !== undefined) dialer.noise = params.noise;
  return { dialer };
}

/**
 * The links of one inbound, with `remark`, as text around each grant's credential: linkTargetOf
 * and the builder's checks of everything but the credential run once.
 */
export function linkShapeOf(params: LinkParams, remark: string): LinkShape {
  const shape = linkShape(linkTargetOf({ ...params, remark }, ""));
  const key = params.protocol === "shadowsocks" ? params.shadowsocksServerKey : undefined;
  if (key === undefined) return shape;
  return { ...shape, secret: (credential) => shape.secret(`${key}:${credential}`) };
}

function withoutReality(security: Security): Exclude<Security, { type: "reality" }> {
  if (security.type === "reality") throw new InvalidLinkTargetError("REALITY links exist for VLESS only");
  return security;
}

function text(value: JsonValue | undefined): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function texts(value: JsonValue | undefined): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const items = value.filter((item): item is string => typeof item === "string" && item !== "");
  return items.length > 0 ? items : undefined;
}

const DNS_NAME =
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)$/i;

/**
 * The name clients should send as SNI and Host: the first candidate that is a DNS name. A wildcard
 * certificate's domain is no name to send; the server's hostname is, when the wildcard covers it.
 */
function linkDomain(candidates: (string | undefined)[], hostname: string): string | undefined {
  for (const candidate of candidates) {
    if (candidate === undefined) continue;
    if (candidate.startsWith("*.")) {
      const suffix = candidate.slice(1).toLowerCase();
      const lower = hostname.toLowerCase();
      if (lower.endsWith(suffix) && !lower.slice(0, -suffix.length).includes(".")) return hostname;
      continue;
    }
    if (DNS_NAME.test(candidate) && !IP_LITERAL.test(candidate)) return candidate;
  }
  return undefined;
}

function transportOf(stream: JsonObject | undefined, domain: string | undefined): Transport {
  const network = normaliseNetwork(text(stream?.network) ?? "tcp");
  if (network === "ws" || network === "httpupgrade") {
    const settings = objectAt(stream?.[network === "ws" ? "wsSettings" : "httpupgradeSettings"]);
    const host = text(settings?.host) ?? text(objectAt(settings?.headers)?.Host) ?? domain;
    return { type: network, path: text(settings?.path) ?? "/", ...(host === undefined ? {} : { host }) };
  }
  if (network === "grpc") {
    const settings = objectAt(stream?.grpcSettings);
    const authority = text(settings?.authority);
    return {
      type: "grpc",
      serviceName: text(settings?.serviceName) ?? "",
      mode: settings?.multiMode === true ? "multi" : "gun",
      ...(authority === undefined ? {} : { authority }),
    };
  }
  if (network === "xhttp") return xhttpOf(stream, domain);
  return { type: "tcp" };
}

/** XHTTP as clients need it: the core's path, host and mode, and the client-side settings as `extra`. */
function xhttpOf(stream: JsonObject | undefined, domain: string | undefined): Transport {
  const settings = objectAt(stream?.xhttpSettings) ?? objectAt(stream?.splithttpSettings) ?? {};
  const host = text(settings.host) ?? domain;
  const extra = xhttpClientExtra(settings);
  return {
    type: "xhttp",
    path: text(settings.path) ?? "/",
    mode: xhttpMode(settings.mode) ?? "auto",
    ...(host === undefined ? {} : { host }),
    ...(extra === undefined ? {} : { extra }),
  };
}

/** The first string of a list, even an empty one (a REALITY shortId may be ""). */
function firstString(value: JsonValue | undefined): string | undefined {
  return Array.isArray(value) ? value.find((item): item is string => typeof item === "string") : undefined;
}

function fingerprint(value: JsonValue | undefined): Fingerprint | undefined {
  return FINGERPRINTS.find((name) => name === value);
}

function securityOf(stream: JsonObject | undefined, domain: string | undefined, hostname: string): Security {
  const security = (text(stream?.security) ?? "none").toLowerCase();
  if (security === "tls") {
    const tls = objectAt(stream?.tlsSettings);
    const sni = domain ?? linkDomain([text(tls?.serverName)], hostname);
    const alpn = texts(tls?.alpn);
    const fp = fingerprint(tls?.fingerprint);
    return {
      type: "tls",
      ...(sni === undefined ? {} : { sni }),
      ...(alpn === undefined ? {} : { alpn }),
      ...(fp === undefined ? {} : { fingerprint: fp }),
    };
  }
  if (security === "reality") return realityOf(objectAt(stream?.realitySettings));
  return { type: "none" };
}

function realityOf(reality: JsonObject | undefined): Security {
  const privateKey = text(reality?.privateKey) ?? "";
  let publicKey = "";
  try {
    publicKey = realityPublicKey(privateKey);
  } catch {
    // left empty: building the link reports the malformed key instead of a wrong one
  }
  const spiderX = text(reality?.spiderX);
  return {
    type: "reality",
    sni: texts(reality?.serverNames)?.[0] ?? "",
    publicKey,
    shortId: firstString(reality?.shortIds) ?? "",
    fingerprint: fingerprint(reality?.fingerprint) ?? "chrome",
    ...(spiderX === undefined ? {} : { spiderX }),
  };
}
