import type { LinkTarget, Transport, TrojanTarget, VlessTarget, VmessTarget } from "../../src/links/types.ts";

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export class UnsupportedByClientError extends Error {}

function unsupported(message: string): never {
  throw new UnsupportedByClientError(message);
}

export type V2rayOutboundOptions = {
  tag?: string;
  /** PEM of the CA (or self-signed certificate) that TLS servers are verified against. */
  caFile?: string;
};

/** A v2ray 4.34 outbound for the decoded link (tcp/ws transports, none/tls security). */
export function toV2rayOutbound(decoded: LinkTarget, options: V2rayOutboundOptions = {}): JsonObject {
  const outbound: JsonObject = { tag: options.tag ?? `out-${decoded.protocol}`, protocol: decoded.protocol };
  if (decoded.protocol === "shadowsocks") {
    const { password } = decoded.credential;
    const method = methodAsWritten(decoded.credential.method);
    if (method.startsWith("2022-")) unsupported(`v2ray 4.34: unknown cipher method ${method}`);
    outbound.settings = { servers: [{ address: decoded.host, port: decoded.port, method, password }] };
    return outbound;
  }
  outbound.settings = v2raySettings(decoded);
  outbound.streamSettings = v2rayStream(decoded, options.caFile);
  return outbound;
}

function v2raySettings(decoded: VlessTarget | VmessTarget | TrojanTarget): JsonObject {
  const { host: address, port } = decoded;
  switch (decoded.protocol) {
    case "vless": {
      if (decoded.credential.flow !== undefined) unsupported("v2ray 4.34 has no xtls-rprx-vision");
      const user = { id: decoded.credential.id, encryption: decoded.credential.encryption };
      return { vnext: [{ address, port, users: [user] }] };
    }
    case "vmess": {
      const user = { id: decoded.credential.id, alterId: 0, security: decoded.credential.cipher };
      return { vnext: [{ address, port, users: [user] }] };
    }
    case "trojan":
      return { servers: [{ address, port, password: decoded.credential.password }] };
  }
}

function v2rayStream(
  decoded: VlessTarget | VmessTarget | TrojanTarget,
  caFile: string | undefined,
): JsonObject {
  const stream = v2rayTransport(decoded.transport);
  const security = decoded.security;
  if (security.type === "reality") unsupported("v2ray 4.34 has no REALITY (it accepts the config silently)");
  if (security.type === "tls") {
    // uTLS fingerprints do not exist in 4.34; they change the ClientHello, not whether it connects.
    const tls: JsonObject = { serverName: security.sni ?? decoded.host };
    if (security.alpn !== undefined) tls.alpn = security.alpn;
    if (security.allowInsecure === true) tls.allowInsecure = true;
    if (caFile !== undefined) tls.certificates = [{ usage: "verify", certificateFile: caFile }];
    stream.security = "tls";
    stream.tlsSettings = tls;
  }
  return stream;
}

function v2rayTransport(transport: Transport): JsonObject {
  switch (transport.type) {
    case "tcp": {
      if (transport.http === undefined) return { network: "tcp" };
      const headers: JsonObject = transport.http.host === undefined ? {} : { Host: transport.http.host };
      const request = { path: transport.http.path ?? ["/"], headers };
      return { network: "tcp", tcpSettings: { header: { type: "http", request } } };
    }
    case "ws": {
      const headers: JsonObject = transport.host === undefined ? {} : { Host: transport.host };
      return { network: "ws", wsSettings: { path: transport.path ?? "/", headers } };
    }
    case "grpc":
    case "httpupgrade":
    case "xhttp":
      return unsupported(`v2ray 4.34: unknown transport protocol ${transport.type}`);
  }
}

/**
 * The method as the link wrote it (what a client copies into its config): the decoder names
 * SIP002's chacha20-ietf-poly1305 as LinkTarget does, chacha20-poly1305, and ss-local knows only
 * the ietf name.
 */
function methodAsWritten(method: string): string {
  return method === "chacha20-poly1305" ? "chacha20-ietf-poly1305" : method;
}

/** An ss-local 3.3.5 `-c` config (AEAD methods only: it has no 2022 ciphers). */
export function toSsLocalConfig(decoded: LinkTarget, localPort: number): JsonObject {
  if (decoded.protocol !== "shadowsocks") return unsupported(`ss-local cannot speak ${decoded.protocol}`);
  const { password } = decoded.credential;
  const method = methodAsWritten(decoded.credential.method);
  if (method.startsWith("2022-")) unsupported(`ss-local 3.3.5 has no ${method}`);
  return {
    server: decoded.host,
    server_port: decoded.port,
    local_address: "127.0.0.1",
    local_port: localPort,
    password,
    method,
    timeout: 60,
  };
}

/** A trojan 1.16 client config: TLS over plain TCP only, verifying the server unless the link is insecure. */
export function toTrojanClientConfig(decoded: LinkTarget, localPort: number, caFile?: string): JsonObject {
  if (decoded.protocol !== "trojan") return unsupported(`trojan cannot speak ${decoded.protocol}`);
  const { security, transport } = decoded;
  if (security.type !== "tls") return unsupported("the trojan client always speaks TLS");
  if (transport.type !== "tcp" || transport.http !== undefined)
    unsupported("the trojan client speaks only raw TCP");
  const isVerified = security.allowInsecure !== true;
  return {
    run_type: "client",
    local_addr: "127.0.0.1",
    local_port: localPort,
    remote_addr: decoded.host,
    remote_port: decoded.port,
    password: [decoded.credential.password],
    log_level: 1,
    ssl: {
      verify: isVerified,
      verify_hostname: isVerified,
      cert: caFile ?? "",
      sni: security.sni ?? decoded.host,
      alpn: security.alpn ?? ["h2", "http/1.1"],
      reuse_session: true,
      session_ticket: false,
      curves: "",
    },
    tcp: { no_delay: true, keep_alive: true, reuse_port: false, fast_open: false, fast_open_qlen: 20 },
  };
}
