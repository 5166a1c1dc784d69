// The flavor-neutral result of reading an operator's inbound JSON: validated, normalised values
// that the V2Ray and Xray encoders turn into protobuf without further checks.

import type { ShadowsocksMethod } from "../../protocols/shadowsocks.ts";
import type { Network } from "../../protocols/streams.ts";
import type { XhttpMode, XhttpRange } from "../../protocols/xhttp.ts";

export type UserPlan = {
  email: string;
  level: number;
  /** UUID (lower case) for vless/vmess, password for trojan/shadowsocks, base64 key for SS-2022. */
  credential: string;
  /** VLESS only: "" or "xtls-rprx-vision". */
  flow: string;
};

export type ProxyPlan =
  | { protocol: "vless" | "vmess" | "trojan"; users: UserPlan[] }
  | {
      protocol: "shadowsocks";
      method: ShadowsocksMethod;
      /** SS-2022 only: the server key (base64). */
      serverKey: string;
      users: UserPlan[];
      networks: ("tcp" | "udp")[];
      ivCheck: boolean;
    };

export type TlsPlan = {
  certificates: { certificatePem: string; keyPem: string }[];
  serverName: string;
  alpn: string[];
  minVersion: string;
  maxVersion: string;
  cipherSuites: string;
  rejectUnknownSni: boolean;
};

export type RealityPlan = {
  show: boolean;
  dest: string;
  type: "tcp" | "unix";
  xver: number;
  serverNames: string[];
  privateKey: Uint8Array;
  minClientVer: Uint8Array;
  maxClientVer: Uint8Array;
  maxTimeDiffMs: number;
  shortIds: Uint8Array[];
};

export type HttpPathPlan = {
  path: string;
  host: string;
  headers: Record<string, string>;
  acceptProxyProtocol: boolean;
};

/** The XHTTP settings a server reads (client-only keys go to links, not to the core). */
export type XhttpPlan = {
  host: string;
  path: string;
  mode: XhttpMode;
  xPaddingBytes: XhttpRange | null;
  noSSEHeader: boolean;
  scMaxEachPostBytes: XhttpRange | null;
  scMaxBufferedPosts: number;
  /** Only on layouts where field 11 is scStreamUpServerSecs (XhttpVariant "keepalive"). */
  scStreamUpServerSecs: XhttpRange | null;
};

export type StreamPlan = {
  network: Network;
  security: "none" | "tls" | "reality";
  tls: TlsPlan | null;
  reality: RealityPlan | null;
  ws: HttpPathPlan | null;
  httpupgrade: HttpPathPlan | null;
  grpc: { serviceName: string; authority: string } | null;
  xhttp: XhttpPlan | null;
};

export type SniffingPlan = {
  enabled: boolean;
  destOverride: string[];
  metadataOnly: boolean;
  routeOnly: boolean;
};

export type InboundPlan = {
  tag: string;
  port: number;
  /** 4 or 16 raw bytes. */
  listen: Uint8Array;
  proxy: ProxyPlan;
  stream: StreamPlan;
  sniffing: SniffingPlan | null;
};
