// How a core call travels: the seam between the core client (which turns operations into method
// paths and request bytes) and the wire. `direct` is a gRPC channel to the core's own API
// (grpc-channel.ts); `node` is the Portcullis agent on the proxy host, reached over mutual TLS
// (node-transport.ts), which hands the same bytes to its local core. Everything built on the
// client (reconciler, traffic, layout probe, /test, stats) is the same through both.

import type { PreparedCall } from "./flavor-api.ts";

export const CORE_CONNECTIONS = ["direct", "node"] as const;
/** How the panel reaches a server's core: its gRPC API directly, or through the node agent. */
export type CoreConnection = (typeof CORE_CONNECTIONS)[number];

export interface CoreTransport {
  readonly kind: CoreConnection;
  /** Where calls go, for messages: "host:port". */
  readonly address: string;
  /** Sends one prepared call; every failure comes back as an AppError (core_unavailable, …). */
  call<T>(prepared: PreparedCall<T>, extraSecrets?: readonly string[]): Promise<T>;
  close(): void;
}

/** The node agent's own routes beyond core calls (status, traffic journal, online, renewal). */
export interface AgentLink {
  json<T>(method: "GET" | "POST" | "PUT", name: string, body?: unknown): Promise<T>;
}
