// What a share link says, independent of any protocol's link syntax: the subscription service
// maps an inbound + grant + server to a LinkTarget, and the builders in this folder render it.
import type { ShadowsocksMethod } from "../protocols/shadowsocks.ts";
import type { VlessFlow } from "../protocols/vless.ts";
import type { XhttpClientExtra, XhttpMode } from "../protocols/xhttp.ts";

export const FINGERPRINTS = [
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
export type Fingerprint = (typeof FINGERPRINTS)[number];

/**
 * The VMess ciphers a link may name. Never `auto`: sing-box sends `auto` on the wire as written, and
 * Xray 26 refuses a request whose security is `auto` (docs/LINKS.md, "VMess cipher").
 */
export const VMESS_CIPHERS = ["aes-128-gcm", "chacha20-poly1305"] as const;
export type VmessCipher = (typeof VMESS_CIPHERS)[number];
/** What every link and document writes: AES-GCM runs in hardware on x86-64 and ARMv8 clients. */
export const VMESS_CIPHER: VmessCipher = "aes-128-gcm";

/** RAW TCP; `http` is the HTTP header obfuscation (Xray `tcpSettings.header.type = "http"`). */
export type TcpTransport = { type: "tcp"; http?: { host?: string[]; path?: string[] } };
export type WsTransport = { type: "ws"; path?: string; host?: string };
export type HttpUpgradeTransport = { type: "httpupgrade"; path?: string; host?: string };
export type GrpcTransport = { type: "grpc"; serviceName: string; mode: "gun" | "multi"; authority?: string };
/** Xray's XHTTP; `extra` is what clients read beyond host, path and mode (Xray's xhttpSettings.extra). */
export type XhttpTransport = {
  type: "xhttp";
  path?: string;
  host?: string;
  mode: XhttpMode;
  extra?: XhttpClientExtra;
};
export type Transport = TcpTransport | WsTransport | HttpUpgradeTransport | GrpcTransport | XhttpTransport;
export type TransportType = Transport["type"];

export type NoSecurity = { type: "none" };
export type TlsSecurity = {
  type: "tls";
  sni?: string;
  alpn?: string[];
  fingerprint?: Fingerprint;
  /** For self-signed test servers only; written as `allowInsecure=1&insecure=1`. */
  allowInsecure?: boolean;
};
export type RealitySecurity = {
  type: "reality";
  sni: string;
  /** X25519 public key, base64url without padding (43 characters). */
  publicKey: string;
  /** Hex, even length, at most 16 characters; may be empty. */
  shortId: string;
  fingerprint: Fingerprint;
  spiderX?: string;
};
export type Security = NoSecurity | TlsSecurity | RealitySecurity;

/**
 * How a client dials an entry (a host's `mux`, `fragment` and `noise`, issue 48), written only where a
 * format carries it (docs/LINKS.md, "Mux, fragment and noise"): xray-json's outbound `mux` and a
 * freedom dialer proxy with Xray's `fragment` and `noises`; sing-box's TLS `fragment`; no share link.
 */
export type Dialer = {
  /** Xray's Mux.Cool: up to `concurrency` streams over one connection. */
  mux?: { concurrency: number };
  /** Xray freedom's TLS ClientHello fragmentation; ranges are "N" or "N-M". */
  fragment?: { packets: string; length: string; interval: string };
  /** Xray freedom's UDP noise packets sent before the first packet. */
  noise?: readonly { type: "rand" | "str" | "base64" | "hex"; packet: string; delay: string }[];
};

type Endpoint = {
  /** The server's hostname: a domain (written in punycode), an IPv4 or a bare IPv6 literal. */
  host: string;
  /** The inbound's port. */
  port: number;
  remark: string;
  dialer?: Dialer;
};

export type VlessTarget = Endpoint & {
  protocol: "vless";
  /** `encryption` is the client side of the inbound's `decryption`; usually "none". */
  credential: { id: string; encryption: string; flow?: VlessFlow };
  transport: Transport;
  security: Security;
};
export type VmessTarget = Endpoint & {
  protocol: "vmess";
  /** alterId is always 0 (AEAD); the cipher is the client's choice. */
  credential: { id: string; cipher: VmessCipher };
  transport: Transport;
  security: NoSecurity | TlsSecurity;
};
export type TrojanTarget = Endpoint & {
  protocol: "trojan";
  credential: { password: string };
  transport: Transport;
  security: NoSecurity | TlsSecurity;
};
/** Xray Shadowsocks inbounds are plain TCP/UDP: no transport, no TLS, no plugin. */
export type ShadowsocksTarget = Endpoint & {
  protocol: "shadowsocks";
  /** For 2022 multi-user inbounds the password is `serverKey:userKey`. */
  credential: { method: ShadowsocksMethod; password: string };
};

export type LinkTarget = VlessTarget | VmessTarget | TrojanTarget | ShadowsocksTarget;
export type LinkProtocol = LinkTarget["protocol"];
