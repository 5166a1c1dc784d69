// A host as the subscription engine reads it (issue 48): another address of an inbound, with the
// link fields it overrides. Read from inbound_hosts with the inbound's link parameters and never
// stored in them; host-entries.ts turns each into the link parameters of one entry.

/** The formats a host can be left out of: `links` is the share-link list (base64 and plain). */
export const HOST_FORMATS = ["links", "mihomo", "sing-box", "xray-json"] as const;
export type HostFormat = (typeof HOST_FORMATS)[number];

/** `inbound`: the inbound's own security; `tls`: TLS terminated in front (a CDN or reverse proxy). */
export const HOST_SECURITIES = ["inbound", "none", "tls"] as const;
export type HostSecurity = (typeof HOST_SECURITIES)[number];

export type HostMux = { concurrency: number };
export type HostFragment = { packets: string; length: string; interval: string };
export type HostNoise = { type: "rand" | "str" | "base64" | "hex"; packet: string; delay: string };

export type HostSpec = {
  /** null: the server's hostname. */
  address: string | null;
  /** null: the inbound's port. */
  port: number | null;
  /** A template ({SERVER}, {PROTOCOL}, {TRANSPORT}, and per user {USERNAME}…); null: the inbound's remark. */
  remark: string | null;
  /** One is chosen per fetch; empty: the inbound's. */
  sni: readonly string[];
  host: readonly string[];
  path: string | null;
  alpn: readonly string[] | null;
  fingerprint: string | null;
  security: HostSecurity;
  allowInsecure: boolean;
  mux: HostMux | null;
  fragment: HostFragment | null;
  noise: readonly HostNoise[] | null;
  excludeFrom: readonly HostFormat[];
  followsHealth: boolean;
};

/** The enabled hosts of one inbound, in position order, and what their entries depend on. */
export type InboundHosts = {
  serverName: string;
  /** false while the server's status is offline or error: hosts that follow its health are left out. */
  serverHealthy: boolean;
  hosts: readonly HostSpec[];
};
