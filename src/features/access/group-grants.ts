// Group grants (issue 49): a group's inbounds reach its members as ordinary grants, so the reconciler,
// links, usage and the lifecycle stay one mechanism. converge() makes one inbound's grants agree with
// the groups holding it, for some users or for all: a covered user without a grant gets one (is_own
// false), a grant held only through groups whose user no group covers any more is revoked. It runs
// under the inbound's lock and reads the memberships inside it, so two group changes racing on one
// inbound end in what the database says, whichever runs last.
import { limiter, settleAll } from "../../lib/limiter.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import { USER_PUSH_PARALLELISM } from "../sync/push.ts";
import type { AccessRepository } from "./access.repository.ts";
import { newGrantRow } from "./grant-rows.ts";

export type ConvergeResult = {
  server_inbound_id: string;
  granted: number;
  revoked: number;
  sync: { synced: number; pending: number; error: number };
};

export class GroupGrants {
  constructor(
    private readonly access: AccessRepository,
    private readonly inbounds: InboundsRepository,
    private readonly sync: CoreSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** 422 core_capacity when the inbound cannot hold `adding` more users (a V2Ray shadowsocks seat). */
  async checkRoom(inbound: InboundRow, adding: number, path: string): Promise<void> {
    await this.sync.checkCapacity(inbound, adding, { path, message: "holds one user only" });
  }

  /** `userIds`: only these users (a membership change); every member when omitted. */
  async converge(inboundId: string, userIds?: readonly string[]): Promise<ConvergeResult> {
    return this.sync.exclusive(inboundId, async () => {
      const result = { server_inbound_id: inboundId, granted: 0, revoked: 0 };
      const sync = { synced: 0, pending: 0, error: 0 };
      const inbound = await this.inbounds.findInboundById(inboundId);
      if (inbound === undefined) return { ...result, sync };
      const covered = await this.access.listGroupCoveredUserIds(inboundId, userIds);
      const grants = await this.access.listOnInbound(inboundId, userIds);
      const granted = new Set(grants.map((grant) => grant.user_id));
      const stale = grants.filter((grant) => !grant.is_own && !covered.has(grant.user_id));
      const fresh = [...covered].filter((userId) => !granted.has(userId));
      if (stale.length > 0) {
        await settleAll(stale, limiter(USER_PUSH_PARALLELISM), (g) => this.sync.removeGrant(g, inbound));
        await this.access.deleteManyKeepingTraffic(stale.map((grant) => grant.id));
      }
      if (fresh.length > 0) {
        const taken = await this.access.listCredentials(inboundId);
        const now = this.now().toISOString();
        const rows = fresh.map((userId) => newGrantRow(inbound, userId, 0, now, taken, false));
        await this.access.insertMany(rows);
        const statuses = await this.sync.pushGrants(inbound, rows, limiter(USER_PUSH_PARALLELISM));
        for (const row of rows) sync[statuses.get(row.id)?.state ?? row.sync_state]++;
      }
      return { ...result, granted: fresh.length, revoked: stale.length, sync };
    });
  }
}
