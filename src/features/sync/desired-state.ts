// The inputs of planReconcile read from the database and the core: the server's inbounds and grants
// as plan rows (all of them, or only those not synced yet), the queued removals, and on Xray the
// core's own listing of the inbounds Portcullis manages (other inbounds on the core are left alone).
import type { CoreClient } from "../../cores/core-client.ts";
import { API_INBOUND_TAGS, type CoreFlavor } from "../../cores/core-types.ts";
import type { Limiter } from "../../lib/limiter.ts";
import { holdsUserInline } from "./desired.ts";
import type { DesiredGrant, DesiredServer, ObservedInbound } from "./plan.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import { type GrantStore, type InboundStore, isOnCore, type SyncGrant, type SyncInbound } from "./stores.ts";

export type DesiredSnapshot = {
  server: DesiredServer;
  /**
   * Every grant in the snapshot as planned: its sync_state, to skip rows an API call synced meanwhile,
   * and its revision, which the outcome written back is conditional on.
   */
  planned: Map<string, PlannedGrant>;
  /** Scope "all": every grant of each inbound, as read (an apply takes them from here). */
  grantsOf: Map<string, SyncGrant[]> | undefined;
};

export type PlannedGrant = Pick<SyncGrant, "id" | "sync_state" | "sync_revision">;

export type Scope = { kind: "all" } | { kind: "unsynced"; withErrors: boolean };

export async function readDesired(
  repos: { inbounds: InboundStore; grants: GrantStore; removals: RemovalsRepository },
  serverId: string,
  flavor: CoreFlavor,
  scope: Scope,
): Promise<DesiredSnapshot> {
  const inbounds = await repos.inbounds.listByServer(serverId);
  const grants =
    scope.kind === "all"
      ? await repos.grants.listByServer(serverId)
      : await repos.grants.listUnsyncedByServer(serverId, scope.withErrors);
  const byInbound = new Map<string, DesiredGrant[]>();
  const planned = new Map<string, PlannedGrant>();
  const grantsOf = scope.kind === "all" ? new Map<string, SyncGrant[]>() : undefined;
  for (const grant of grants) {
    const list = byInbound.get(grant.server_inbound_id) ?? [];
    list.push(planGrant(grant));
    byInbound.set(grant.server_inbound_id, list);
    // The row itself (never changed once read): a copy of its three fields would be 60,000 more objects a server.
    planned.set(grant.id, grant);
    if (grantsOf !== undefined) {
      const rows = grantsOf.get(grant.server_inbound_id) ?? [];
      rows.push(grant);
      grantsOf.set(grant.server_inbound_id, rows);
    }
  }
  const removals = (await repos.removals.listForServer(serverId)).map((r) => ({
    id: r.id,
    tag: r.inbound_tag,
    email: r.email,
  }));
  return {
    server: {
      inbounds: inbounds.map((row) => planInbound(row, flavor, byInbound.get(row.id) ?? [])),
      removals,
    },
    planned,
    grantsOf,
  };
}

function planInbound(row: SyncInbound, flavor: CoreFlavor, grants: DesiredGrant[]) {
  return {
    inboundId: row.id,
    tag: row.tag,
    port: row.port,
    protocol: row.link_params.protocol,
    isActive: row.is_active,
    syncState: row.sync_state,
    holdsUserInline: holdsUserInline(row.link_params.protocol, flavor),
    grants,
  };
}

function planGrant(grant: SyncGrant): DesiredGrant {
  return {
    accessId: grant.id,
    email: grant.proxy_user_id,
    credential: grant.credential,
    level: grant.level,
    // A grant of a limited, expired or disabled user is planned as inactive: off the core, kept in the database.
    isActive: isOnCore(grant),
    syncState: grant.sync_state,
  };
}

/** Xray's listing of the inbounds the database knows (or has queued removals for), with their users. */
export async function listManaged(
  client: CoreClient,
  desired: DesiredServer,
  limit: Limiter,
): Promise<Map<string, ObservedInbound>> {
  const managed = new Set([...desired.inbounds.map((i) => i.tag), ...desired.removals.map((r) => r.tag)]);
  for (const tag of API_INBOUND_TAGS) managed.delete(tag);
  const listed = (await client.listInbounds()).filter((inbound) => managed.has(inbound.tag));
  const out = new Map<string, ObservedInbound>();
  await Promise.all(
    listed.map((inbound) =>
      limit(async () => {
        const users = await client.listInboundUsers(inbound.tag);
        out.set(inbound.tag, {
          protocol: inbound.protocol,
          portRanges: inbound.portRanges,
          users: new Map(
            users.map((u) => [u.email.toLowerCase(), { credential: u.credential, level: u.level }]),
          ),
        });
      }),
    ),
  );
  return out;
}
