// Reads `streamSettings`: the transport (tcp, ws, grpc, httpupgrade, xhttp) and its settings, and
// hands security (tls, reality) to read-security.ts. Transports the target layout lacks are reported.

import { normaliseNetwork } from "../../protocols/streams.ts";
import type { CoreFlavor } from "../core-types.ts";
import { LAYOUT_FACTS, type WireLayout } from "../wire-layout.ts";
import type { ObjectReader } from "./json-reader.ts";
import type { HttpPathPlan, StreamPlan } from "./plan.ts";
import { readReality, readTls } from "./read-security.ts";
import { readXhttp } from "./read-xhttp.ts";

const SETTINGS_KEY = {
  tcp: ["tcpSettings", "rawSettings"],
  ws: ["wsSettings"],
  grpc: ["grpcSettings"],
  httpupgrade: ["httpupgradeSettings"],
  xhttp: ["xhttpSettings", "splithttpSettings"],
} as const;

const OTHER_TRANSPORT_KEYS = ["kcpSettings", "httpSettings", "h2Settings", "quicSettings", "dsSettings"];

/** Why a layout without XHTTP cannot take it, naming the core and its releases. */
const NO_XHTTP: Record<WireLayout, string> = {
  "v2ray-4": "xhttp transport is not supported by V2Ray 4.x (use tcp or ws)",
  "xray-1.8":
    "xhttp (splithttp) is not supported on Xray 1.8.x (layout xray-1.8): splithttp appeared in 1.8.15 and its settings were renumbered in later 1.8 releases; XHTTP needs Xray 25.1 or later",
  "xray-24.9":
    "xhttp (splithttp) is not supported on Xray 24.x and the late 1.8 releases (layout xray-24.9): its settings were renumbered several times in those releases, so one encoding cannot fit the core; XHTTP needs Xray 25.1 or later",
  "xray-25.1": "",
  "xray-25.10": "",
};

export const PLAIN_TCP: StreamPlan = {
  network: "tcp",
  security: "none",
  tls: null,
  reality: null,
  ws: null,
  httpupgrade: null,
  grpc: null,
  xhttp: null,
};

export function readStream(stream: ObjectReader | undefined, layout: WireLayout): StreamPlan | undefined {
  if (stream === undefined) return PLAIN_TCP;
  const flavor = LAYOUT_FACTS[layout].flavor;
  const { network, requested } = readNetwork(stream, layout);
  const security = readSecurity(stream, flavor);
  const plan: StreamPlan = { ...PLAIN_TCP, network: network ?? "tcp", security: security ?? "none" };
  readTransportSettings(stream, plan, layout, requested);
  readSecuritySettings(stream, plan, flavor);
  if (plan.security === "reality" && (plan.network === "ws" || plan.network === "httpupgrade")) {
    stream.problem("network", "REALITY works only with tcp (raw), xhttp or grpc");
  }
  for (const key of OTHER_TRANSPORT_KEYS) stream.unsupported(key, "transport not supported by Portcullis");
  stream.unsupported("sockopt", "sockopt is not supported by Portcullis");
  stream.finish();
  const failed = network === undefined || security === undefined;
  const incomplete =
    (plan.security === "tls" && plan.tls === null) || (plan.security === "reality" && plan.reality === null);
  return failed || incomplete ? undefined : plan;
}

function readSecuritySettings(stream: ObjectReader, plan: StreamPlan, flavor: CoreFlavor): void {
  if (plan.security === "tls") {
    const tls = readTls(stream.object("tlsSettings"), stream.at("tlsSettings"), stream.problems, flavor);
    plan.tls = tls ?? null;
  } else {
    stream.unsupported("tlsSettings", 'is given but security is not "tls"');
  }
  if (plan.security === "reality") {
    const reality = readReality(
      stream.object("realitySettings"),
      stream.at("realitySettings"),
      stream.problems,
    );
    plan.reality = reality ?? null;
  } else {
    stream.unsupported("realitySettings", 'is given but security is not "reality"');
  }
}

type Network = StreamPlan["network"];

/** The network, or none when refused; `requested` is what the operator named (its settings are not "stray"). */
function readNetwork(stream: ObjectReader, layout: WireLayout): { network?: Network; requested?: Network } {
  const text = stream.string("network") ?? "tcp";
  const requested = normaliseNetwork(text);
  if (requested === undefined) {
    stream.problem("network", "must be tcp (raw), ws, grpc, httpupgrade or xhttp");
    return {};
  }
  if (layout === "v2ray-4" && (requested === "grpc" || requested === "httpupgrade")) {
    stream.problem("network", `${text} transport is not supported by V2Ray 4.x (use tcp or ws)`);
    return { requested };
  }
  if (requested === "xhttp" && LAYOUT_FACTS[layout].xhttp === "none") {
    stream.problem("network", NO_XHTTP[layout]);
    return { requested };
  }
  return { network: requested, requested };
}

function readSecurity(stream: ObjectReader, flavor: CoreFlavor): StreamPlan["security"] | undefined {
  const text = (stream.string("security") ?? "none").toLowerCase();
  if (text === "" || text === "none") return "none";
  if (text === "tls") return "tls";
  if (text === "reality") {
    if (flavor === "xray") return "reality";
    stream.problem("security", "REALITY is not supported by V2Ray 4.x");
    return undefined;
  }
  stream.problem("security", 'must be "none", "tls" or "reality"');
  return undefined;
}

function readTransportSettings(
  stream: ObjectReader,
  plan: StreamPlan,
  layout: WireLayout,
  requested: Network | undefined,
): void {
  const flavor = LAYOUT_FACTS[layout].flavor;
  for (const [network, keys] of Object.entries(SETTINGS_KEY)) {
    if (network === plan.network) continue;
    // The settings of a refused network: the network's own problem says it all.
    if (network === requested) for (const key of keys) stream.raw(key);
    else for (const key of keys) stream.unsupported(key, `is given but network is ${plan.network}`);
  }
  const xhttp = LAYOUT_FACTS[layout].xhttp;
  if (plan.network === "xhttp" && xhttp !== "none") {
    const settings = stream.object("xhttpSettings");
    if (settings !== undefined) {
      stream.unsupported("splithttpSettings", "is ignored by Xray when xhttpSettings is given");
    }
    plan.xhttp = readXhttp(settings ?? stream.object("splithttpSettings"), xhttp);
  }
  if (plan.network === "tcp") readTcp(stream);
  if (plan.network === "ws") plan.ws = readHttpPath(stream.object("wsSettings"), flavor, "ws");
  if (plan.network === "httpupgrade") {
    plan.httpupgrade = readHttpPath(stream.object("httpupgradeSettings"), flavor, "httpupgrade");
  }
  if (plan.network === "grpc") plan.grpc = readGrpc(stream.object("grpcSettings"));
}

function readTcp(stream: ObjectReader): void {
  for (const key of SETTINGS_KEY.tcp) {
    const tcp = stream.object(key);
    if (tcp === undefined) continue;
    const header = tcp.object("header");
    const type = header?.string("type") ?? "none";
    if (type !== "none") header?.problem("type", 'only "none" is supported (no HTTP obfuscation)');
    header?.finish();
    tcp.unsupported("acceptProxyProtocol", "not supported by Portcullis");
    tcp.finish();
  }
}

function readHttpPath(
  settings: ObjectReader | undefined,
  flavor: CoreFlavor,
  kind: "ws" | "httpupgrade",
): HttpPathPlan {
  const plan: HttpPathPlan = { path: "/", host: "", headers: {}, acceptProxyProtocol: false };
  if (settings === undefined) return plan;
  const path = settings.string("path") ?? "/";
  if (!path.startsWith("/")) settings.problem("path", 'must start with "/"');
  plan.path = path;
  plan.host = settings.string("host") ?? "";
  if (plan.host !== "" && flavor === "v2ray") settings.problem("host", "not supported by V2Ray 4.x");
  plan.headers = readHeaders(settings);
  if (kind === "httpupgrade" && Object.keys(plan.headers).some((name) => name.toLowerCase() === "host")) {
    settings.problem("headers", 'must not contain "Host" (use host)');
  }
  plan.acceptProxyProtocol = settings.bool("acceptProxyProtocol") ?? false;
  settings.unsupported("heartbeatPeriod", "not supported by Portcullis");
  settings.finish();
  return plan;
}

function readHeaders(settings: ObjectReader): Record<string, string> {
  const headers = settings.object("headers");
  if (headers === undefined) return {};
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers.value)) {
    const value = headers.string(name);
    if (value !== undefined) out[name] = value;
  }
  headers.finish();
  return out;
}

function readGrpc(settings: ObjectReader | undefined): StreamPlan["grpc"] {
  if (settings === undefined) return { serviceName: "", authority: "" };
  const serviceName = settings.string("serviceName") ?? "";
  const authority = settings.string("authority") ?? "";
  // Client-side tuning that a server inbound ignores.
  settings.harmless(
    "multiMode",
    "idle_timeout",
    "health_check_timeout",
    "permit_without_stream",
    "initial_windows_size",
    "user_agent",
  );
  settings.finish();
  return { serviceName, authority };
}
