// The reconciler's memory in SQL, one row per server: which core process last received the full
// desired state (so a restart is recognised after Portcullis itself restarted or another instance
// took over), a full sync asked for on another instance, and the outcome of the last reconcile.
import type { Kysely } from "kysely";
import { isWireLayout, type WireLayout } from "../../cores/wire-layout.ts";
import { read } from "../../db/dialect.ts";
import type { Database } from "../../db/types.ts";
import type { SyncState } from "../../domain/sync.ts";

export type ServerSyncState = {
  appliedCoreStartedAt: string | null;
  /** The wire layout that full state was applied with (null: before layouts were recorded). */
  appliedWireLayout: WireLayout | null;
  fullSyncRequestedAt: string | null;
  lastReconciledAt: string | null;
  lastReconcileError: string | null;
};

const EMPTY: ServerSyncState = {
  appliedCoreStartedAt: null,
  appliedWireLayout: null,
  fullSyncRequestedAt: null,
  lastReconciledAt: null,
  lastReconcileError: null,
};

type Patch = Partial<{
  applied_core_started_at: string | null;
  applied_wire_layout: WireLayout | null;
  full_sync_requested_at: string | null;
  last_reconciled_at: string;
  last_reconcile_error: string | null;
}>;

export class ServerSyncRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async find(serverId: string): Promise<ServerSyncState> {
    const row = await this.db
      .selectFrom("server_sync")
      .selectAll()
      .where("server_id", "=", serverId)
      .executeTakeFirst();
    if (row === undefined) return EMPTY;
    return {
      appliedCoreStartedAt: read.optionalTimestamp(row.applied_core_started_at),
      appliedWireLayout: isWireLayout(row.applied_wire_layout) ? row.applied_wire_layout : null,
      fullSyncRequestedAt: read.optionalTimestamp(row.full_sync_requested_at),
      lastReconciledAt: read.optionalTimestamp(row.last_reconciled_at),
      lastReconcileError: row.last_reconcile_error,
    };
  }

  /** Inserts the server's row or changes the given columns of it. */
  async update(serverId: string, patch: Patch): Promise<void> {
    await this.db
      .insertInto("server_sync")
      .values({ server_id: serverId, ...patch })
      .onConflict((oc) => oc.column("server_id").doUpdateSet(patch))
      .execute();
  }

  /** Whether anything waits for the core: inbounds or grants not synced, or queued removals. */
  async hasWork(serverId: string, withErrors: boolean): Promise<boolean> {
    const states: SyncState[] = withErrors ? ["pending", "error"] : ["pending"];
    const row = await this.db
      .selectNoFrom((eb) => [
        eb
          .exists(
            eb
              .selectFrom("server_inbounds")
              .select("id")
              .where("server_id", "=", serverId)
              .where("sync_state", "in", states),
          )
          .as("inbounds"),
        eb
          .exists(
            eb
              .selectFrom("user_access")
              .select("id")
              .where("server_id", "=", serverId)
              .where("sync_state", "in", states),
          )
          .as("grants"),
        eb
          .exists(eb.selectFrom("core_removals").select("id").where("server_id", "=", serverId))
          .as("removals"),
      ])
      .executeTakeFirstOrThrow();
    return [row.inbounds, row.grants, row.removals].some((value) => read.bool(value as boolean | number));
  }
}
