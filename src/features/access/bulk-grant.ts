// Granting one inbound to many existing users at once (POST …/users/bulk, `portcullis access
// grant-bulk`): the rows are stored in one transaction (all or none), then pushed to the core with
// many adds in flight. A crash after the commit leaves them pending, and the reconciler adds them.
import { randomUUID } from "node:crypto";
import type { CoreProtocol } from "../../cores/core-types.ts";
import { UnprocessableError } from "../../lib/errors.ts";
import { limiter } from "../../lib/limiter.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import { holdsUserInline } from "../sync/desired.ts";
import { USER_PUSH_PARALLELISM } from "../sync/push.ts";
import type { UsersService } from "../users/users.service.ts";
import type { AccessRepository, AccessRow } from "./access.repository.ts";
import type { BulkGrantCreate, BulkGrantResult } from "./access.schemas.ts";
import { newCredential, proxyUserIdFor } from "./credentials.ts";

/** A new grant row, pending until the core has it. */
export function newGrantRow(
  inbound: Pick<InboundRow, "id" | "server_id">,
  userId: string,
  level: number,
  credential: string,
  now: string,
): AccessRow {
  return {
    id: randomUUID(),
    user_id: userId,
    server_inbound_id: inbound.id,
    server_id: inbound.server_id,
    proxy_user_id: proxyUserIdFor(inbound.server_id, userId),
    credential,
    level,
    is_active: true,
    sync_state: "pending",
    sync_error: null,
    uplink_bytes: 0,
    downlink_bytes: 0,
    created_at: now,
    updated_at: now,
  };
}

export class BulkGrants {
  constructor(
    private readonly access: AccessRepository,
    private readonly inbounds: InboundsRepository,
    private readonly users: UsersService,
    private readonly servers: ServersService,
    private readonly sync: CoreSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async grant(serverId: string, inboundId: string, input: BulkGrantCreate): Promise<BulkGrantResult> {
    const startedMs = performance.now();
    await this.servers.get(serverId);
    return this.sync.exclusive(inboundId, async () => {
      const inbound = await this.inbounds.getInbound(serverId, inboundId);
      const wanted = [...new Set(input.user_ids.map((id) => id.toLowerCase()))];
      const known = await this.users.existingIds(wanted);
      const granted = await this.access.listGrantedUserIds(inboundId, wanted);
      const fresh = wanted.filter((id) => known.has(id) && !granted.has(id));
      await this.#checkCapacity(inbound, fresh.length);
      const rows = await this.#rows(inbound, fresh, input.level ?? 0);
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

  /** Fresh credentials, none equal to another on the inbound (drawn again in the unlikely event). */
  async #rows(inbound: InboundRow, userIds: readonly string[], level: number): Promise<AccessRow[]> {
    const taken = await this.access.listCredentials(inbound.id);
    const now = this.now().toISOString();
    const { protocol, shadowsocksMethod } = inbound.link_params;
    return userIds.map((userId) => {
      let credential = newCredential(protocol, shadowsocksMethod);
      while (taken.has(credential)) credential = newCredential(protocol, shadowsocksMethod);
      taken.add(credential);
      return newGrantRow(inbound, userId, level, credential, now);
    });
  }

  /** V2Ray 4.x shadowsocks holds one user per inbound: more is refused before anything is stored. */
  async #checkCapacity(inbound: InboundRow, adding: number): Promise<void> {
    const protocol: CoreProtocol = inbound.link_params.protocol;
    if (adding === 0 || protocol !== "shadowsocks") return;
    const flavor = await this.sync.flavorOf(inbound.server_id);
    if (flavor === null || !holdsUserInline(protocol, flavor)) return;
    const existing = (await this.access.listActiveIds(inbound.id)).length;
    if (existing + adding <= 1) return;
    const detail = `this server's core (V2Ray 4.x) holds exactly one user per shadowsocks inbound; ${existing} granted, ${adding} asked`;
    throw new UnprocessableError(
      detail,
      [{ path: "body.user_ids", message: "more than one user" }],
      "core_capacity",
    );
  }
}
