// What provisioning reads and writes, in its own terms. The inbounds and access repositories satisfy
// these interfaces as they are, so sync depends on no other feature's storage: inbounds and access
// call down into sync, never the other way (docs/ARCHITECTURE.md, "the life of a grant").
import type { CoreProtocol } from "../../cores/core-types.ts";
import type { SyncState } from "../../domain/sync.ts";
import type { JsonValue } from "../../lib/json.ts";

/** An inbound as provisioning needs it: what it is built from and where it stands on its core. */
export type SyncInbound = {
  id: string;
  server_id: string;
  template_id: string;
  tag: string;
  port: number;
  certificate_id: string | null;
  variable_values: Record<string, JsonValue>;
  secrets_sealed: string;
  /** Of the link parameters only the protocol matters here: it decides how users reach the core. */
  link_params: { protocol: CoreProtocol };
  is_active: boolean;
  sync_state: SyncState;
  sync_error: string | null;
};

/** A grant as provisioning needs it: who the user is on the core, their secret, and its state. */
export type SyncGrant = {
  id: string;
  user_id: string;
  server_inbound_id: string;
  server_id: string;
  proxy_user_id: string;
  credential: string;
  level: number;
  is_active: boolean;
  sync_state: SyncState;
  sync_error: string | null;
  /**
   * Bumped whenever the grant's core state goes out of date other than by a push (its user's
   * admission, its credential): an outcome is written back only for the revision it was worked out
   * from (GrantStore.setSyncState).
   */
  sync_revision: number;
  /**
   * The user's status lets them onto cores (active or on_hold; docs/LIFECYCLE.md). Read by the
   * reconciler's queries; absent on rows built in memory, where pushGrants asks the store instead.
   */
  is_user_admitted?: boolean;
};

/** Whether the grant's user belongs on its core: the grant is active and its user admitted. */
export function isOnCore(grant: Pick<SyncGrant, "is_active" | "is_user_admitted">): boolean {
  return grant.is_active && grant.is_user_admitted !== false;
}

export interface InboundStore {
  findInboundById(id: string): Promise<SyncInbound | undefined>;
  listByServer(serverId: string): Promise<SyncInbound[]>;
  /** Sync bookkeeping, not an edit: updated_at stays. */
  setSyncState(id: string, state: SyncState, error: string | null, syncedAt?: string): Promise<void>;
  setSyncStateMany(
    ids: readonly string[],
    state: SyncState,
    error: string | null,
    syncedAt?: string,
  ): Promise<void>;
}

/** A grant as of one revision: what an outcome written back is conditional on. */
export type GrantRevision = Pick<SyncGrant, "id" | "sync_revision">;

export interface GrantStore {
  findById(id: string): Promise<SyncGrant | undefined>;
  findByIds(ids: readonly string[]): Promise<SyncGrant[]>;
  /** onlyOnCore: active grants of admitted users only (what the core should hold). */
  listByInbound(inboundId: string, onlyOnCore?: boolean): Promise<SyncGrant[]>;
  /** Active grants, whatever their users' status (capacity: a limited user keeps their place). */
  listActiveIds(inboundId: string): Promise<string[]>;
  /** Active grants of admitted users: what the core holds once synced. */
  listOnCoreIds(inboundId: string): Promise<string[]>;
  /** Which of these users are not admitted to cores (limited, expired, disabled). */
  listUnadmittedUserIds(userIds: readonly string[]): Promise<Set<string>>;
  listByUser(userId: string): Promise<SyncGrant[]>;
  listByServer(serverId: string): Promise<SyncGrant[]>;
  /** Pending grants, and those in error too when asked. */
  listUnsyncedByServer(serverId: string, withErrors: boolean): Promise<SyncGrant[]>;
  /**
   * The outcome of a push for these grants, each as of the revision it was read at: a grant whose
   * revision moved on meanwhile is left as it is (pending: the next tick works it out again). Rows
   * already in that state are not written again.
   */
  setSyncState(grants: readonly GrantRevision[], state: SyncState, error: string | null): Promise<void>;
}
