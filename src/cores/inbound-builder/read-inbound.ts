// Reads a whole Xray-style inbound object (protocol, port, listen, tag, settings, streamSettings,
// sniffing) into an InboundPlan, collecting every problem for the target flavor.

import { VLESS_VISION_FLOW } from "../../protocols/vless.ts";
import { CORE_PROTOCOLS, type CoreFlavor, type CoreProtocol, type Problem } from "../core-types.ts";
import { layoutFlavor, type WireLayout } from "../wire-layout.ts";
import { ObjectReader } from "./json-reader.ts";
import type { InboundPlan, ProxyPlan, SniffingPlan, StreamPlan } from "./plan.ts";
import { readUserProxy } from "./read-clients.ts";
import { readShadowsocks } from "./read-shadowsocks.ts";
import { readStream } from "./read-stream.ts";
import { parseListen, parsePort, tagProblem } from "./values.ts";

const SNIFF_TARGETS = { xray: ["http", "tls", "quic", "fakedns"], v2ray: ["http", "tls"] } as const;

export type ReadOptions = {
  /** Tags the builder must refuse, e.g. the core's API inbound. */
  reservedTags?: readonly string[];
};

export function readInbound(
  json: unknown,
  layout: WireLayout,
  options: ReadOptions = {},
): { plan?: InboundPlan; problems: Problem[] } {
  const flavor = layoutFlavor(layout);
  const problems: Problem[] = [];
  const root = ObjectReader.of(json, "", problems);
  if (root === undefined) return { problems };
  const tag = readTag(root, options.reservedTags ?? []);
  const port = readPortKey(root);
  const listen = readListenKey(root);
  const protocol = readProtocol(root);
  const stream = readStream(root.object("streamSettings"), layout);
  const proxy = protocol === undefined ? undefined : readSettings(root, protocol, flavor);
  const sniffing = readSniffing(root.object("sniffing"), flavor);
  root.unsupported("allocate", "port allocation strategies are not supported");
  root.harmless("remark");
  root.finish();
  if (proxy !== undefined && stream !== undefined) checkFlow(proxy, stream, problems);
  if (
    problems.length > 0 ||
    tag === undefined ||
    port === undefined ||
    listen === undefined ||
    proxy === undefined ||
    stream === undefined ||
    sniffing === undefined
  ) {
    return { problems };
  }
  return { plan: { tag, port, listen, proxy, stream, sniffing }, problems };
}

function readTag(root: ObjectReader, reserved: readonly string[]): string | undefined {
  const tag = root.string("tag");
  if (tag === undefined) {
    if (!root.has("tag")) root.problem("tag", "is required");
    return undefined;
  }
  const message = reserved.includes(tag) ? "is reserved (the core's API inbound)" : tagProblem(tag);
  if (message !== undefined) root.problem("tag", message);
  return message === undefined ? tag : undefined;
}

function readPortKey(root: ObjectReader): number | undefined {
  const raw = root.raw("port");
  if (raw === undefined) {
    root.problem("port", "is required (an inbound without a port crashes V2Ray)");
    return undefined;
  }
  const parsed = parsePort(raw);
  if ("problem" in parsed) root.problem("port", parsed.problem);
  return "port" in parsed ? parsed.port : undefined;
}

function readListenKey(root: ObjectReader): Uint8Array | undefined {
  const text = root.string("listen") ?? "0.0.0.0";
  const listen = parseListen(text);
  if (listen === undefined) {
    root.problem("listen", "must be an IPv4 or IPv6 address (no domains or unix sockets)");
  }
  return listen;
}

function readProtocol(root: ObjectReader): CoreProtocol | undefined {
  const text = root.string("protocol");
  const protocol = CORE_PROTOCOLS.find((name) => name === text);
  if (protocol === undefined) root.problem("protocol", `must be one of ${CORE_PROTOCOLS.join(", ")}`);
  return protocol;
}

function readSettings(root: ObjectReader, protocol: CoreProtocol, flavor: CoreFlavor): ProxyPlan | undefined {
  const settings = root.has("settings")
    ? root.object("settings")
    : new ObjectReader({}, root.at("settings"), root.problems);
  if (settings === undefined) return undefined;
  const proxy =
    protocol === "shadowsocks"
      ? readShadowsocks(settings, flavor)
      : readUserProxy(protocol, settings, flavor);
  settings.finish();
  return proxy;
}

function readSniffing(
  sniffing: ObjectReader | undefined,
  flavor: CoreFlavor,
): SniffingPlan | null | undefined {
  if (sniffing === undefined) return null;
  const before = sniffing.problems.length;
  const destOverride = sniffing.strings("destOverride") ?? [];
  const allowed: readonly string[] = SNIFF_TARGETS[flavor];
  for (const target of destOverride) {
    if (!allowed.includes(target)) {
      sniffing.problem("destOverride", `"${target}" is not one of ${allowed.join(", ")}`);
    }
  }
  const plan: SniffingPlan = {
    enabled: sniffing.bool("enabled") ?? false,
    destOverride,
    metadataOnly: sniffing.bool("metadataOnly") ?? false,
    routeOnly: sniffing.bool("routeOnly") ?? false,
  };
  if (flavor === "v2ray") {
    if (plan.metadataOnly) sniffing.problem("metadataOnly", "not supported by V2Ray 4.x");
    if (plan.routeOnly) sniffing.problem("routeOnly", "not supported by V2Ray 4.x");
  }
  sniffing.unsupported("domainsExcluded", "not supported by Portcullis");
  sniffing.finish();
  return sniffing.problems.length === before ? plan : undefined;
}

/** Vision needs raw TCP under TLS or REALITY; elsewhere the core drops every connection. */
function checkFlow(proxy: ProxyPlan, stream: StreamPlan, problems: Problem[]): void {
  if (proxy.protocol !== "vless" || !proxy.users.some((user) => user.flow === VLESS_VISION_FLOW)) return;
  if (stream.network !== "tcp" || stream.security === "none") {
    problems.push({
      path: "settings.clients",
      message: `flow ${VLESS_VISION_FLOW} needs network tcp with tls or reality`,
    });
  }
}
