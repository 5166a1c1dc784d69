// Vocabulary shared by the core client and the inbound builder: the two API flavors, the proxy
// protocols Portcullis manages, and the flavor-neutral results the client returns.

export const CORE_FLAVORS = ["xray", "v2ray"] as const;
/** `xray`: Xray-core (`xray.*` proto packages); `v2ray`: V2Ray/v2fly 4.x (`v2ray.core.*`). */
export type CoreFlavor = (typeof CORE_FLAVORS)[number];

export const CORE_PROTOCOLS = ["vless", "vmess", "trojan", "shadowsocks"] as const;
export type CoreProtocol = (typeof CORE_PROTOCOLS)[number];

/** The tags operators give the core API's own inbound (dokodemo-door): never shown in stats, never touched. */
export const API_INBOUND_TAGS = ["api", "api-in"] as const;

/** One thing wrong with an inbound or user, in the operator's JSON terms. */
export type Problem = { path: string; message: string };

export type BuildResult<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

/** What the client needs to know about an inbound on the core to add or remove its users. */
export type InboundRef = {
  tag: string;
  protocol: CoreProtocol;
  /** Shadowsocks only: the inbound's method (a 2022 method takes a different account type). */
  shadowsocksMethod?: string;
};

/** A traffic counter, e.g. `user>>>EMAIL>>>traffic>>>downlink`. int64 on the wire, so a bigint. */
export type CoreStat = { name: string; value: bigint };

/** Bytes one way and the other, as a traffic poll adds them up (safe as numbers below 2^53). */
export type TrafficPair = { uplinkBytes: number; downlinkBytes: number };
/**
 * A poll's traffic counters (cores/traffic-scan.ts): per user email as JSON array items
 * `["email",uplinkBytes,downlinkBytes]` joined by commas (`count` of them; an email may repeat when
 * answers were joined: readers add them up), and per inbound tag.
 */
export type CoreTraffic = { users: { json: string; count: number }; inbounds: Map<string, TrafficPair> };

/** GetSysStats, flavor-neutral. Memory figures are bytes (safe as numbers below 2^53). */
export type CoreSysStats = {
  uptimeSeconds: number;
  goroutines: number;
  gcCount: number;
  allocBytes: number;
  totalAllocBytes: number;
  sysBytes: number;
  mallocs: number;
  frees: number;
  liveObjects: number;
  pauseTotalNs: number;
};

/** An inbound as listed by the core (Xray ListInbounds). */
export type CoreInboundInfo = {
  tag: string;
  /** Derived from the proxy settings type; null for protocols Portcullis does not manage. */
  protocol: CoreProtocol | null;
  proxyType: string | null;
  /** [from, to] pairs. */
  portRanges: [number, number][];
};

/** A user as listed by the core (Xray GetInboundUsers). */
export type CoreInboundUser = {
  email: string;
  level: number;
  accountType: string | null;
  /** The UUID, password or key the core holds: a secret, never log it. */
  credential: string | null;
};
