// Writing outcomes back: grant states grouped by outcome (one UPDATE per distinct state and error,
// in chunks), and queued removals made moot because the user is on the core again. Shared by
// CoreSync and the reconciler, so thousands of grants cost a handful of statements.
import type { SyncState } from "../../db/types.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import type { GrantStore } from "./stores.ts";

export type Settled = { id: string; status: { state: SyncState; error: string | null } };

export class SyncRecorder {
  constructor(
    private readonly store: Pick<GrantStore, "setSyncState">,
    private readonly removals: RemovalsRepository,
  ) {}

  async grants(settled: readonly Settled[]): Promise<void> {
    const groups = new Map<string, { status: Settled["status"]; ids: string[] }>();
    for (const { id, status } of settled) {
      const key = `${status.state}\n${status.error ?? ""}`;
      const group = groups.get(key) ?? { status, ids: [] };
      group.ids.push(id);
      groups.set(key, group);
    }
    for (const { status, ids } of groups.values()) {
      await this.store.setSyncState(ids, status.state, status.error);
    }
  }

  /**
   * Records grants as synced while a push is still running, so 10,000 state updates overlap with the
   * core calls instead of following them. done() waits for the writes and names the ids written.
   */
  whileRunning(): { onSynced: (ids: string[]) => void; done(): Promise<Set<string>> } {
    const written = new Set<string>();
    const writes: Promise<void>[] = [];
    let failure: unknown;
    return {
      onSynced: (ids) => {
        for (const id of ids) written.add(id);
        writes.push(
          this.store.setSyncState(ids, "synced", null).catch((error: unknown) => {
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
