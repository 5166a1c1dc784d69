// One client per server, reused across requests and jobs; a changed address or credentials
// replaces the client, and close(serverId) / closeAll() release channels.

import { type ApiCredentials, credentialsHash } from "./api-credentials.ts";
import type { CoreClient } from "./core-client.ts";
import type { CoreFlavor } from "./core-types.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";

export type CoreTarget = {
  serverId: string;
  address: string;
  credentials?: ApiCredentials;
  /** The flavor stored with the server, if known. */
  flavor?: CoreFlavor | null;
};

type PoolOptions = Omit<GrpcCoreClientOptions, "address" | "credentials" | "flavor">;

export class CorePool {
  private readonly clients = new Map<string, { key: string; client: CoreClient }>();

  constructor(
    private readonly options: PoolOptions = {},
    private readonly create: (options: GrpcCoreClientOptions) => CoreClient = (o) => new GrpcCoreClient(o),
  ) {}

  get(target: CoreTarget): CoreClient {
    const key = `${target.address}\n${credentialsHash(target.credentials)}`;
    const entry = this.clients.get(target.serverId);
    if (entry !== undefined && entry.key === key) return entry.client;
    entry?.client.close();
    const client = this.create({
      ...this.options,
      address: target.address,
      credentials: target.credentials,
      flavor: target.flavor ?? null,
    });
    this.clients.set(target.serverId, { key, client });
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
