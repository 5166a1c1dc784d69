// Writing outcomes back: grant states grouped by outcome (one UPDATE per distinct state and error,
// in chunks), and queued removals made moot because the user is on the core again. Shared by
// CoreSync and the reconciler, so thousands of grants cost a handful of statements.
import type { SyncState } from "../../domain/sync.ts";
import { syncBreather } from "../../lib/breather.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import type { GrantRevision, GrantStore } from "./stores.ts";

/** A grant's outcome, as of the revision the push worked from (a later revision drops it). */
export type Settled = { grant: GrantRevision; status: { state: SyncState; error: string | null } };

/** Grants per setSyncState call: the event loop is let in between (SQLite's statements are synchronous). */
const WRITE_SLICE = 2000;

export class SyncRecorder {
  constructor(
    private readonly store: Pick<GrantStore, "setSyncState">,
    private readonly removals: RemovalsRepository,
  ) {}

  async grants(settled: readonly Settled[]): Promise<void> {
    const groups = new Map<string, { status: Settled["status"]; grants: GrantRevision[] }>();
    for (const { grant, status } of settled) {
      const key = `${status.state}\n${status.error ?? ""}`;
      const group = groups.get(key) ?? { status, grants: [] };
      group.grants.push(grant);
      groups.set(key, group);
    }
    for (const { status, grants } of groups.values()) {
      for (let from = 0; from < grants.length; from += WRITE_SLICE) {
        await syncBreather();
        await this.store.setSyncState(grants.slice(from, from + WRITE_SLICE), status.state, status.error);
      }
    }
  }

  /**
   * Records grants as synced while a push is still running, so 10,000 state updates overlap with the
   * core calls instead of following them. done() waits for the writes and names the ids written.
   */
  whileRunning(pushed: readonly GrantRevision[]): {
    onSynced: (ids: string[]) => void;
    done(): Promise<Set<string>>;
  } {
    const revisions = new Map(pushed.map((grant) => [grant.id, grant.sync_revision]));
    const written = new Set<string>();
    const writes: Promise<void>[] = [];
    let failure: unknown;
    return {
      onSynced: (ids) => {
        for (const id of ids) written.add(id);
        // (An id that was not pushed here has no revision to match: nothing is recorded for it.)
        const grants = ids.map((id) => ({ id, sync_revision: revisions.get(id) ?? -1 }));
        writes.push(
          this.store.setSyncState(grants, "synced", null).catch((error: unknown) => {
            failure ??= error;
          }),
        );
      },
      done: async () => {
        await Promise.all(writes);
        if (failure !== undefined) throw failure;
        return written;
      },
    };
  }

  /** These users were just added to the inbound: earlier queued removals of them are moot. */
  async usersBack(serverId: string, tag: string, emails: readonly string[]): Promise<void> {
    if (emails.length === 0 || !(await this.removals.hasAny(serverId))) return;
    await this.removals.clearUsers(serverId, tag, emails);
  }
}
