// One client per server, reused across requests and jobs; a changed address, credentials, pin or
// stored wire layout replaces the client, and close(serverId) / closeAll() release channels.

import { type ApiCredentials, credentialsHash } from "./api-credentials.ts";
import type { CoreClient } from "./core-client.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";
import type { CoreCapability, WireLayout } from "./wire-layout.ts";

export type CoreTarget = {
  serverId: string;
  address: string;
  credentials?: ApiCredentials;
  /** The layout stored with the server, if known, and whether the operator pinned it. */
  layout?: WireLayout | null;
  capabilities?: readonly CoreCapability[] | null;
  isLayoutPinned?: boolean;
};

type PoolOptions = Omit<
  GrpcCoreClientOptions,
  "address" | "credentials" | "layout" | "capabilities" | "isLayoutPinned"
>;

export class CorePool {
  private readonly clients = new Map<string, { key: string; isPinned: boolean; client: CoreClient }>();

  constructor(
    private readonly options: PoolOptions = {},
    private readonly create: (options: GrpcCoreClientOptions) => CoreClient = (o) => new GrpcCoreClient(o),
  ) {}

  get(target: CoreTarget): CoreClient {
    const key = `${target.address}\n${credentialsHash(target.credentials)}`;
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
    const client = this.create({
      ...this.options,
      address: target.address,
      credentials: target.credentials,
      layout: target.layout ?? null,
      capabilities: target.capabilities ?? null,
      isLayoutPinned: isPinned,
    });
    this.clients.set(target.serverId, { key, isPinned, client });
    return client;
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

/**
 * A client stays while it agrees with the stored layout (or nothing is stored yet, or it has not
 * detected yet). A stored layout it does not speak was detected elsewhere (another instance after a
 * core upgrade) and wins: the stale client is replaced.
 */
function fits(client: CoreClient, target: CoreTarget): boolean {
  const stored = target.layout ?? null;
  return stored === null || client.layout === null || client.layout === stored;
}
