// Granting one inbound to many existing users at once (POST …/users/bulk, `portcullis access
// grant-bulk`): the rows are stored in one transaction (all or none), then pushed to the core with
// many adds in flight. A crash after the commit leaves them pending, and the reconciler adds them.
import { limiter } from "../../lib/limiter.ts";
import type { InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import { USER_PUSH_PARALLELISM } from "../sync/push.ts";
import type { UsersService } from "../users/users.service.ts";
import type { AccessRepository } from "./access.repository.ts";
import type { BulkGrantCreate, BulkGrantResult } from "./access.schemas.ts";
import { newGrantRow } from "./grant-rows.ts";

export class BulkGrants {
  constructor(
    private readonly access: AccessRepository,
    private readonly inbounds: InboundsRepository,
    private readonly users: UsersService,
    private readonly servers: ServersService,
    private readonly sync: CoreSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** `ownerId`: only that admin's users (an own access.write); the others count as unknown users. */
  async grant(
    serverId: string,
    inboundId: string,
    input: BulkGrantCreate,
    ownerId?: string,
  ): Promise<BulkGrantResult> {
    const startedMs = performance.now();
    await this.servers.get(serverId);
    return this.sync.exclusive(inboundId, async () => {
      const inbound = await this.inbounds.getInbound(serverId, inboundId);
      const wanted = [...new Set(input.user_ids.map((id) => id.toLowerCase()))];
      const known = await this.users.ownedIds(wanted, ownerId);
      const granted = await this.access.listGrantedUserIds(
        inboundId,
        wanted.filter((id) => known.has(id)),
      );
      const fresh = wanted.filter((id) => known.has(id) && !granted.has(id));
      // A grant held through a group only becomes the user's own too (it outlives the group).
      await this.access.markOwn(inbound.id, [...granted]);
      await this.sync.checkCapacity(inbound, fresh.length, {
        path: "body.user_ids",
        message: "more than one user",
      });
      const taken = await this.access.listCredentials(inbound.id);
      const now = this.now().toISOString();
      const rows = fresh.map((userId) => newGrantRow(inbound, userId, input.level ?? 0, now, taken));
      await this.access.insertMany(rows);
      const statuses = await this.sync.pushGrants(inbound, rows, limiter(USER_PUSH_PARALLELISM));
      const results = rows.map((row) => {
        const status = statuses.get(row.id) ?? { state: row.sync_state, error: null };
        const { user_id, id: access_id, proxy_user_id } = row;
        return { user_id, access_id, proxy_user_id, sync_state: status.state, sync_error: status.error };
      });
      const count = (state: string) => results.filter((r) => r.sync_state === state).length;
      return {
        server_inbound_id: inbound.id,
        requested: wanted.length,
        granted: rows.length,
        already_granted: wanted.filter((id) => granted.has(id)),
        unknown_users: wanted.filter((id) => !known.has(id)),
        sync: { synced: count("synced"), pending: count("pending"), error: count("error") },
        duration_ms: Math.round(performance.now() - startedMs),
        results,
      };
    });
  }
}
