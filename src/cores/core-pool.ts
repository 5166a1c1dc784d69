// One client per server, reused across requests and jobs; a changed address, connection, credentials,
// pin or stored wire layout replaces the client, and close(serverId) / closeAll() release channels.

import { type ApiCredentials, credentialsHash } from "./api-credentials.ts";
import type { CoreClient } from "./core-client.ts";
import type { CoreConnection, CoreTransport } from "./core-transport.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";
import { type NodeMaterial, nodeMaterialHash, UnenrolledTransport } from "./node-material.ts";
import type { CoreCapability, WireLayout } from "./wire-layout.ts";

export type CoreTarget = {
  serverId: string;
  address: string;
  /** `direct` (default): the core's gRPC API at `address`; `node`: the agent listening there. */
  connection?: CoreConnection;
  credentials?: ApiCredentials;
  /** `node` only: what the panel needs to reach the agent; undefined until the node is enrolled. */
  node?: NodeMaterial;
  /** The layout stored with the server, if known, and whether the operator pinned it. */
  layout?: WireLayout | null;
  capabilities?: readonly CoreCapability[] | null;
  isLayoutPinned?: boolean;
};

type PoolOptions = Omit<
  GrpcCoreClientOptions,
  "address" | "credentials" | "layout" | "capabilities" | "isLayoutPinned" | "transport"
>;

/** Makes the transport to an enrolled agent (node-transport.ts in the panel; tests may swap it). */
export type NodeTransportFactory = (
  address: string,
  material: NodeMaterial,
  options: { timeoutMs?: number },
) => CoreTransport;

export class CorePool {
  private readonly clients = new Map<string, { key: string; isPinned: boolean; client: CoreClient }>();

  constructor(
    private readonly options: PoolOptions = {},
    private readonly create: (options: GrpcCoreClientOptions) => CoreClient = (o) => new GrpcCoreClient(o),
    private readonly nodeTransport?: NodeTransportFactory,
  ) {}

  get(target: CoreTarget): CoreClient {
    const key = keyOf(target);
    const isPinned = target.isLayoutPinned === true;
    const entry = this.clients.get(target.serverId);
    if (
      entry !== undefined &&
      entry.key === key &&
      entry.isPinned === isPinned &&
      fits(entry.client, target)
    ) {
      return entry.client;
    }
    entry?.client.close();
    const transport = this.transportFor(target);
    const client = this.create({
      ...this.options,
      address: target.address,
      credentials: target.credentials,
      layout: target.layout ?? null,
      capabilities: target.capabilities ?? null,
      isLayoutPinned: isPinned,
      ...(transport === undefined ? {} : { transport }),
    });
    this.clients.set(target.serverId, { key, isPinned, client });
    return client;
  }

  /** undefined: the default direct gRPC channel. */
  private transportFor(target: CoreTarget): CoreTransport | undefined {
    if (target.connection !== "node") return undefined;
    if (target.node === undefined || this.nodeTransport === undefined) {
      return new UnenrolledTransport(target.address);
    }
    return this.nodeTransport(target.address, target.node, { timeoutMs: this.options.timeoutMs });
  }

  close(serverId: string): void {
    this.clients.get(serverId)?.client.close();
    this.clients.delete(serverId);
  }

  closeAll(): void {
    for (const { client } of this.clients.values()) client.close();
    this.clients.clear();
  }

  get size(): number {
    return this.clients.size;
  }
}

function keyOf(target: CoreTarget): string {
  const connection = target.connection ?? "direct";
  const secret = connection === "node" ? nodeMaterialHash(target.node) : credentialsHash(target.credentials);
  return `${connection}\n${target.address}\n${secret}`;
}

/**
 * A client stays while it agrees with the stored layout (or nothing is stored yet, or it has not
 * detected yet). A stored layout it does not speak was detected elsewhere (another instance after a
 * core upgrade) and wins: the stale client is replaced.
 */
function fits(client: CoreClient, target: CoreTarget): boolean {
  const stored = target.layout ?? null;
  return stored === null || client.layout === null || client.layout === stored;
}
