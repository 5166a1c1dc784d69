// Taking inbounds and users off a core when they are revoked, deleted or renamed. Best effort: a
// removal that cannot reach its core (unavailable, timed out) is queued in core_removals for the
// reconciler, so a revoke or delete always succeeds in the database.
import type { Logger } from "pino";
import type { CoreClient } from "../../cores/core-client.ts";
import { AppError, CoreNotFoundError } from "../../lib/errors.ts";
import type { ServersService } from "../servers/servers.service.ts";
import { holdsUserInline } from "./desired.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import type { GrantStore, InboundStore, SyncGrant, SyncInbound } from "./stores.ts";

type Deps = {
  inbounds: InboundStore;
  grants: GrantStore;
  removals: RemovalsRepository;
  servers: ServersService;
  logger: Logger;
};

type Hooks = {
  connect(serverId: string): Promise<{ client: CoreClient }>;
  exclusive<T>(inboundId: string, task: () => Promise<T>): Promise<T>;
  now(): Date;
};

export class CoreRemovals {
  constructor(
    private readonly deps: Deps,
    private readonly hooks: Hooks,
  ) {}

  /** Takes a revoked grant off its core. Best effort: a removal that fails is queued, never thrown. */
  async removeGrant(grant: SyncGrant, inbound: SyncInbound): Promise<void> {
    if (!mayBeOnCore(inbound) || !grant.is_active) return;
    const flavor = (await this.deps.servers.get(inbound.server_id)).core;
    if (flavor === null) return; // never reached, so nothing was ever pushed
    const isInline = holdsUserInline(inbound.link_params.protocol, flavor);
    await this.#removeOrQueue(inbound.server_id, inbound.tag, isInline ? null : grant.proxy_user_id);
  }

  /** Takes an inbound (about to be deleted or renamed) off its core. Best effort, like removeGrant. */
  async removeInbound(
    inbound: Pick<SyncInbound, "server_id" | "tag" | "is_active" | "sync_state">,
  ): Promise<void> {
    if (!mayBeOnCore(inbound)) return;
    if ((await this.deps.servers.get(inbound.server_id)).core === null) return;
    await this.#removeOrQueue(inbound.server_id, inbound.tag, null);
  }

  /** Before a user is deleted: every grant off its core (queued where the core is unreachable). */
  async revokeUser(userId: string): Promise<void> {
    for (const grant of await this.deps.grants.listByUser(userId)) {
      await this.hooks.exclusive(grant.server_inbound_id, async () => {
        const inbound = await this.deps.inbounds.findInboundById(grant.server_inbound_id);
        if (inbound !== undefined) await this.removeGrant(grant, inbound);
      });
    }
  }

  /** Before a server is deleted: its inbounds off the core, in parallel, without queueing (the server goes). */
  async removeServerInbounds(serverId: string): Promise<void> {
    const server = await this.deps.servers.get(serverId);
    if (server.core === null) return;
    const client = await this.deps.servers.clientOf(serverId);
    const inbounds = (await this.deps.inbounds.listByServer(serverId)).filter(mayBeOnCore);
    await Promise.allSettled(inbounds.map((inbound) => client.removeInbound(inbound.tag)));
  }

  async #removeOrQueue(serverId: string, tag: string, email: string | null): Promise<void> {
    try {
      const { client } = await this.hooks.connect(serverId);
      await (email === null ? client.removeInbound(tag) : client.removeUser(tag, email));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error instanceof CoreNotFoundError) return;
      this.deps.logger.warn({ server_id: serverId, tag, code: error.code }, "core removal failed; queued");
      await this.deps.removals.enqueue(serverId, tag, email, this.hooks.now().toISOString());
    }
  }
}

/** Inactive and synced means the core was told to drop it and did; anything else may be there. */
function mayBeOnCore(inbound: Pick<SyncInbound, "is_active" | "sync_state">): boolean {
  return inbound.is_active || inbound.sync_state !== "synced";
}
