// Carries out a reconcile plan on one core: removals, then whole inbounds, then single users, with
// many calls in flight through one limiter, each inbound's changes under its lock (so an API grant
// and the reconciler never interleave on it), and the outcome written back in a few statements.
// A core that becomes unreachable, or a cancelled run, stops it: what was not done stays pending.
import type { CoreClient } from "../../cores/core-client.ts";
import { AppError, CoreDownError, type ErrorCode } from "../../lib/errors.ts";
import { eachWithWorkers, type Limiter } from "../../lib/limiter.ts";
import type { CoreSync } from "./core-sync.ts";
import type { PlannedGrant } from "./desired-state.ts";
import type { ReconcileAction } from "./plan.ts";
import { removeInboundIfPresent, removeUserIfPresent, USER_PUSH_PARALLELISM } from "./push.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import type { GrantRevision, GrantStore, InboundStore, SyncGrant } from "./stores.ts";
import type { SyncRecorder } from "./sync-recorder.ts";

export type ExecutionContext = {
  client: CoreClient;
  sync: CoreSync;
  inbounds: InboundStore;
  grants: GrantStore;
  removals: RemovalsRepository;
  recorder: SyncRecorder;
  limit: Limiter;
  signal: AbortSignal;
  /** Tracked mode: an action whose row was synced meanwhile (by an API call) is skipped. */
  skipSettled: boolean;
  /** Each grant as the plan saw it: its sync_state and the revision its outcome is written for. */
  planned: ReadonlyMap<string, PlannedGrant>;
  /**
   * Full mode: every grant of each inbound as the snapshot read them, so an apply does not read them
   * again; each inbound's rows are handed over once and dropped here (not held for the whole run).
   */
  grantsOf?: Map<string, readonly SyncGrant[]>;
  now: () => Date;
};

export type ActionError = { tag: string; email: string | null; code: ErrorCode; message: string };

export type ExecutionResult = {
  inbounds: number;
  users: number;
  removed: number;
  errors: ActionError[];
  /** Stopped early: the core went away or the run was cancelled. */
  isIncomplete: boolean;
};

type Of<K extends ReconcileAction["kind"]> = Extract<ReconcileAction, { kind: K }>;

const MAX_ERRORS = 100;

export async function executePlan(actions: readonly ReconcileAction[], ctx: ExecutionContext) {
  const result: ExecutionResult = { inbounds: 0, users: 0, removed: 0, errors: [], isIncomplete: false };
  const run = new Run(ctx, result);
  await run.each(ofKind(actions, "remove_inbound"), (a) => run.removeInbound(a));
  await run.each(ofKind(actions, "remove_user"), (a) => run.removeUser(a));
  await run.each(ofKind(actions, "apply_inbound"), (a) => run.apply(a));
  await run.each(groupByInbound(ofKind(actions, "add_user")), (group) => run.addUsers(group));
  if (!run.isStopped()) for (const action of ofKind(actions, "settle")) await run.settle(action);
  result.isIncomplete = run.isStopped();
  return result;
}

function ofKind<K extends ReconcileAction["kind"]>(actions: readonly ReconcileAction[], kind: K): Of<K>[] {
  return actions.filter((action): action is Of<K> => action.kind === kind);
}

function groupByInbound(adds: Of<"add_user">[]): Of<"add_user">[][] {
  const groups = new Map<string, Of<"add_user">[]>();
  for (const add of adds) {
    const group = groups.get(add.inboundId) ?? [];
    group.push(add);
    groups.set(add.inboundId, group);
  }
  return [...groups.values()];
}

class Run {
  #isDown = false;

  constructor(
    private readonly ctx: ExecutionContext,
    private readonly result: ExecutionResult,
  ) {}

  isStopped(): boolean {
    return this.#isDown || this.ctx.signal.aborted;
  }

  /** Runs the step for each item, many at once (core calls are bounded by the limiter), stopping early. */
  async each<T>(items: readonly T[], step: (item: T) => Promise<void>): Promise<void> {
    await eachWithWorkers(items, USER_PUSH_PARALLELISM, async (item) => {
      if (this.isStopped()) return;
      try {
        await step(item);
      } catch (error) {
        this.#fail(error, { tag: "", email: null });
      }
    });
  }

  async removeInbound(action: Of<"remove_inbound">): Promise<void> {
    if (!(await this.#call({ tag: action.tag, email: null }, (c) => removeInboundIfPresent(c, action.tag))))
      return;
    this.result.removed += 1;
    await this.ctx.inbounds.setSyncStateMany(action.inboundIds, "synced", null, this.ctx.now().toISOString());
    await this.ctx.removals.deleteByIds(action.removalIds);
  }

  async removeUser(action: Of<"remove_user">): Promise<void> {
    const where = { tag: action.tag, email: action.email };
    if (!(await this.#call(where, (c) => removeUserIfPresent(c, action.tag, action.email)))) return;
    this.result.removed += 1;
    await this.ctx.grants.setSyncState(this.#asPlanned(action.accessIds), "synced", null);
    await this.ctx.removals.deleteByIds(action.removalIds);
  }

  /** The whole inbound with all its users, unless (tracked mode) an API call applied it meanwhile. */
  async apply(action: Of<"apply_inbound">): Promise<void> {
    await this.ctx.sync.exclusive(action.inboundId, async () => {
      const row = await this.ctx.inbounds.findInboundById(action.inboundId);
      if (row === undefined || (this.ctx.skipSettled && row.sync_state === "synced") || this.isStopped())
        return;
      const known = this.ctx.grantsOf === undefined ? undefined : (this.ctx.grantsOf.get(row.id) ?? []);
      this.ctx.grantsOf?.delete(row.id);
      const status = await this.ctx.sync.applyInbound(action.inboundId, this.ctx.limit, known);
      this.result.users += status.users;
      if (status.state === "pending") this.#isDown = true;
      if (status.state === "error") this.#error({ tag: action.tag, email: null }, "core_error", status.error);
      if (status.state !== "synced") return;
      this.result.inbounds += 1;
    });
  }

  /** Users of one inbound the core holds; rows synced meanwhile by an API call are left alone. */
  async addUsers(group: Of<"add_user">[]): Promise<void> {
    const [first] = group;
    if (first === undefined) return;
    await this.ctx.sync.exclusive(first.inboundId, async () => {
      const inbound = await this.ctx.inbounds.findInboundById(first.inboundId);
      if (inbound === undefined || this.isStopped()) return;
      const rows = (await this.ctx.grants.findByIds(group.map((a) => a.accessId))).filter((row) =>
        this.#stillDue(row),
      );
      const replaceFirst = new Set(group.filter((a) => a.replace).map((a) => a.accessId));
      const options = { replaceFirst, signal: this.ctx.signal };
      const statuses = await this.ctx.sync.pushGrants(inbound, rows, this.ctx.limit, options);
      for (const row of rows) {
        const status = statuses.get(row.id);
        if (status?.state === "synced") this.result.users += 1;
        else if (status?.state === "pending") this.#isDown = true;
        else if (status?.state === "error") {
          this.#error({ tag: inbound.tag, email: row.proxy_user_id }, "core_error", status.error);
        }
      }
    });
  }

  async settle(action: Of<"settle">): Promise<void> {
    const stamp = this.ctx.now().toISOString();
    await this.ctx.inbounds.setSyncStateMany(action.inboundIds, "synced", null, stamp);
    await this.ctx.recorder.grants(
      this.#asPlanned(action.accessIds).map((grant) => ({ grant, status: { state: "synced", error: null } })),
    );
    await this.ctx.removals.deleteByIds(action.removalIds);
  }

  #stillDue(row: SyncGrant): boolean {
    const planned = this.ctx.planned.get(row.id)?.sync_state;
    return !(this.ctx.skipSettled && planned !== "synced" && row.sync_state === "synced");
  }

  /** The grants at the revisions the plan was made from (a grant the plan did not read records nothing). */
  #asPlanned(accessIds: readonly string[]): GrantRevision[] {
    return accessIds.map((id) => this.ctx.planned.get(id) ?? { id, sync_revision: -1 });
  }

  /** One core call through the limiter; false when it failed (recorded). */
  async #call(where: Omit<ActionError, "code" | "message">, call: (client: CoreClient) => Promise<void>) {
    return this.ctx.limit(async () => {
      if (this.isStopped()) return false;
      try {
        await call(this.ctx.client);
        return true;
      } catch (error) {
        this.#fail(error, where);
        return false;
      }
    });
  }

  #fail(error: unknown, where: Omit<ActionError, "code" | "message">): void {
    if (!(error instanceof AppError)) throw error;
    if (error instanceof CoreDownError) this.#isDown = true;
    this.#error(where, error.code, error.message);
  }

  #error(where: Omit<ActionError, "code" | "message">, code: ErrorCode, message: string | null): void {
    if (this.result.errors.length < MAX_ERRORS) {
      this.result.errors.push({ ...where, code, message: message ?? code });
    }
  }
}
