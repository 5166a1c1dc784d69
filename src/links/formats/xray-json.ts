// Xray JSON: an array of complete client configurations, one per entry, as v2rayN, v2rayNG, Happ and
// Streisand import them (each with its `remarks`): local SOCKS and HTTP inbounds, the entry as the
// `proxy` outbound (the first, so the default route), freedom and blackhole next to it. Everything a
// share link says is expressible here.
import type { LinkTarget, Transport } from "../types.ts";
import {
  ietfMethod,
  NOTHING_TO_CONNECT,
  namedTargets,
  type RenderedFormat,
  type SubscriptionEntry,
} from "./entries.ts";
import type { Json } from "./singbox.ts";

type JsonObject = { [key: string]: Json };

export const XRAY_SOCKS_PORT = 10808;
export const XRAY_HTTP_PORT = 10809;

/** The entry's outbound with its host's dialer settings (mux, the fragment dialer proxy). */
export function xrayOutbound(target: LinkTarget): JsonObject {
  const outbound = proxyOutbound(target);
  const dialer = target.dialer;
  if (dialer === undefined) return outbound;
  if (dialer.mux !== undefined && !visionApplies(target)) {
    outbound.mux = { enabled: true, concurrency: dialer.mux.concurrency };
  }
  if (dialer.fragment !== undefined || dialer.noise !== undefined) {
    const stream = (outbound.streamSettings ?? {}) as JsonObject;
    outbound.streamSettings = { ...stream, sockopt: { dialerProxy: XRAY_FRAGMENT_TAG } };
  }
  return outbound;
}

/** The tag of the freedom outbound that fragments and adds noise for the proxy (v2rayN's name). */
export const XRAY_FRAGMENT_TAG = "fragment";

/**
 * The dialer proxy of an entry with fragment or noise: a freedom outbound with Xray's `fragment` and
 * `noises` that the proxy outbound dials through (`sockopt.dialerProxy`), as v2rayN writes it.
 */
export function xrayFragmentOutbound(target: LinkTarget): JsonObject | undefined {
  const dialer = target.dialer;
  if (dialer?.fragment === undefined && dialer?.noise === undefined) return undefined;
  const settings: JsonObject = {};
  if (dialer.fragment !== undefined) settings.fragment = { ...dialer.fragment };
  if (dialer.noise !== undefined) settings.noises = dialer.noise.map((noise) => ({ ...noise }));
  return {
    tag: XRAY_FRAGMENT_TAG,
    protocol: "freedom",
    settings,
    streamSettings: { sockopt: { tcpNoDelay: true } },
  };
}

/** VLESS Vision: Xray refuses Mux.Cool for TCP with flow xtls-rprx-vision, so its entries get no mux. */
function visionApplies(target: LinkTarget): boolean {
  if (target.protocol !== "vless" || target.credential.flow === undefined) return false;
  return (
    target.transport.type === "tcp" && target.transport.http === undefined && target.security.type !== "none"
  );
}

function proxyOutbound(target: LinkTarget): JsonObject {
  const { host: address, port } = target;
  switch (target.protocol) {
    case "shadowsocks": {
      const server = {
        address,
        port,
        method: ietfMethod(target.credential.method),
        password: target.credential.password,
      };
      return { tag: "proxy", protocol: "shadowsocks", settings: { servers: [server] } };
    }
    case "trojan":
      return {
        tag: "proxy",
        protocol: "trojan",
        settings: { servers: [{ address, port, password: target.credential.password }] },
        streamSettings: streamOf(target),
      };
    case "vmess": {
      const user = { id: target.credential.id, alterId: 0, security: target.credential.cipher };
      return {
        tag: "proxy",
        protocol: "vmess",
        settings: { vnext: [{ address, port, users: [user] }] },
        streamSettings: streamOf(target),
      };
    }
    case "vless": {
      const user: JsonObject = { id: target.credential.id, encryption: target.credential.encryption };
      if (visionApplies(target)) user.flow = target.credential.flow as string;
      return {
        tag: "proxy",
        protocol: "vless",
        settings: { vnext: [{ address, port, users: [user] }] },
        streamSettings: streamOf(target),
      };
    }
  }
}

function streamOf(target: Exclude<LinkTarget, { protocol: "shadowsocks" }>): JsonObject {
  const stream: JsonObject = { network: target.transport.type, security: target.security.type };
  const { security } = target;
  if (security.type === "tls") {
    stream.tlsSettings = {
      serverName: security.sni ?? target.host,
      ...(security.alpn === undefined ? {} : { alpn: security.alpn }),
      ...(security.fingerprint === undefined ? {} : { fingerprint: security.fingerprint }),
      ...(security.allowInsecure === true ? { allowInsecure: true } : {}),
    };
  } else if (security.type === "reality") {
    stream.realitySettings = {
      serverName: security.sni,
      fingerprint: security.fingerprint,
      publicKey: security.publicKey,
      shortId: security.shortId,
      ...(security.spiderX === undefined ? {} : { spiderX: security.spiderX }),
    };
  }
  Object.assign(stream, transportSettings(target.transport));
  return stream;
}

function transportSettings(transport: Transport): JsonObject {
  switch (transport.type) {
    case "tcp": {
      if (transport.http === undefined) return {};
      const headers: JsonObject =
        transport.http.host === undefined ? {} : { headers: { Host: transport.http.host } };
      return {
        tcpSettings: {
          header: { type: "http", request: { path: transport.http.path ?? ["/"], ...headers } },
        },
      };
    }
    case "ws":
      return {
        wsSettings: {
          path: transport.path ?? "/",
          ...(transport.host === undefined ? {} : { headers: { Host: transport.host } }),
        },
      };
    case "httpupgrade":
      return {
        httpupgradeSettings: {
          path: transport.path ?? "/",
          ...(transport.host === undefined ? {} : { host: transport.host }),
        },
      };
    case "grpc":
      return {
        grpcSettings: {
          serviceName: transport.serviceName,
          multiMode: transport.mode === "multi",
          ...(transport.authority === undefined ? {} : { authority: transport.authority }),
        },
      };
    case "xhttp":
      return {
        xhttpSettings: {
          path: transport.path ?? "/",
          mode: transport.mode,
          ...(transport.host === undefined ? {} : { host: transport.host }),
          ...(transport.extra === undefined ? {} : { extra: transport.extra as JsonObject }),
        },
      };
  }
}

/** One complete configuration: what a client runs when the user picks this entry. */
export function xrayConfig(target: LinkTarget, remarks: string): JsonObject {
  const fragment = xrayFragmentOutbound(target);
  return {
    remarks,
    log: { loglevel: "warning" },
    inbounds: [
      {
        tag: "socks",
        listen: "127.0.0.1",
        port: XRAY_SOCKS_PORT,
        protocol: "socks",
        settings: { auth: "noauth", udp: true },
      },
      { tag: "http", listen: "127.0.0.1", port: XRAY_HTTP_PORT, protocol: "http", settings: {} },
    ],
    outbounds: [
      xrayOutbound(target),
      { tag: "direct", protocol: "freedom", settings: {} },
      { tag: "block", protocol: "blackhole", settings: {} },
      ...(fragment === undefined ? [] : [fragment]),
    ],
    routing: { domainStrategy: "AsIs", rules: [] },
  };
}

export function renderXrayJson(entries: readonly SubscriptionEntry[]): RenderedFormat {
  const list = entries.length === 0 ? [{ kind: "placeholder" as const, text: NOTHING_TO_CONNECT }] : entries;
  const configs = namedTargets(list).map(({ name, target }) => xrayConfig(target, name));
  return { body: `${JSON.stringify(configs, null, 2)}\n`, leftOut: [] };
}
