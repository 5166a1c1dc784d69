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

export function xrayOutbound(target: LinkTarget): JsonObject {
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
      const { transport, security } = target;
      const vision =
        target.credential.flow !== undefined &&
        transport.type === "tcp" &&
        transport.http === undefined &&
        security.type !== "none";
      const user: JsonObject = { id: target.credential.id, encryption: target.credential.encryption };
      if (vision) user.flow = target.credential.flow as string;
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
    ],
    routing: { domainStrategy: "AsIs", rules: [] },
  };
}

export function renderXrayJson(entries: readonly SubscriptionEntry[]): RenderedFormat {
  const list = entries.length === 0 ? [{ kind: "placeholder" as const, text: NOTHING_TO_CONNECT }] : entries;
  const configs = namedTargets(list).map(({ name, target }) => xrayConfig(target, name));
  return { body: `${JSON.stringify(configs, null, 2)}\n`, leftOut: [] };
}
