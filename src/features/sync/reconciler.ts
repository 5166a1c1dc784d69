// Brings one server's core to the database, tick by tick: poll GetSysStats, keep the server's status
// with reality, recognise a restart (watch.ts) and ask a new core process its wire layout again (an
// in-place upgrade changes it), decide what kind of reconcile is due, plan it (plan.ts) and carry it
// out (execute-plan.ts). One server never runs two reconciles at once in this
// instance (a per-server lock), and across instances only the lease holder calls tick().
import type { Logger } from "pino";
import type { WireLayout } from "../../cores/wire-layout.ts";
import { AppError, CoreDownError, CoreUnavailableError, NotFoundError } from "../../lib/errors.ts";
import { KeyedLock } from "../../lib/keyed-lock.ts";
import { limiter } from "../../lib/limiter.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { Connected, CoreSync } from "./core-sync.ts";
import { listManaged, readDesired } from "./desired-state.ts";
import { type ActionError, type ExecutionResult, executePlan } from "./execute-plan.ts";
import type { ServerLeases } from "./leases.ts";
import { type Observed, planReconcile } from "./plan.ts";
import { USER_PUSH_PARALLELISM } from "./push.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import type { ServerSyncRepository, ServerSyncState } from "./server-sync.repository.ts";
import type { GrantStore, InboundStore } from "./stores.ts";
import { SyncRecorder } from "./sync-recorder.ts";
import {
  type CorePoll,
  type CoreWatch,
  decideTick,
  NEW_WATCH,
  observe,
  shouldRecheckLayout,
  statusToWrite,
  type TickDecision,
} from "./watch.ts";

/** Xray: list the core this often even when nothing seems wrong, to catch drift made behind our back. */
export const AUDIT_INTERVAL_MS = 60_000;
/** Rows the core refused are retried this often (a port in use may have been freed). */
export const ERROR_RETRY_INTERVAL_MS = 60_000;

export type ReconcilerDeps = {
  sync: CoreSync;
  servers: ServersService;
  inbounds: InboundStore;
  grants: GrantStore;
  removals: RemovalsRepository;
  state: ServerSyncRepository;
  leases: ServerLeases;
  logger: Logger;
  now?: () => Date;
};

export type ReconcileSummary = {
  mode: "full" | "incremental";
  reason: string;
  inbounds: number;
  users: number;
  removed: number;
  duration_ms: number;
  errors: ActionError[];
  is_complete: boolean;
};

type Full = Extract<TickDecision, { mode: "full" | "incremental" }>;
type Timers = { auditAtMs: number; errorRetryAtMs: number };
/** A full apply begun on a core process that cannot be listed: its rows track that process from then on. */
type Resumable = { startedAtMs: number; layout: WireLayout };

export class Reconciler {
  readonly #watches = new Map<string, CoreWatch>();
  readonly #timers = new Map<string, Timers>();
  readonly #lock = new KeyedLock();
  readonly #last = new Map<string, ReconcileSummary>();
  readonly #resumable = new Map<string, Resumable>();
  readonly #now: () => Date;
  readonly #wakeListeners: (() => void)[] = [];

  constructor(private readonly deps: ReconcilerDeps) {
    this.#now = deps.now ?? (() => new Date());
  }

  /** Who runs the ticks (the reconcile job) asks to be told when a tick is wanted before its interval. */
  onWake(listener: () => void): void {
    this.#wakeListeners.push(listener);
  }

  /** Grants were marked pending outside the API's own pushes (a user's status changed): tick soon. */
  wake(): void {
    for (const listener of this.#wakeListeners) listener();
  }

  /** One background tick; undefined when nothing was due (or the core did not answer). */
  tick(serverId: string, signal: AbortSignal): Promise<ReconcileSummary | undefined> {
    return this.#lock.run(serverId, () => this.#tick(serverId, signal));
  }

  /**
   * A full reconcile now (POST /api/servers/{id}/sync): Xray is listed and diffed, V2Ray re-applied.
   * undefined when another instance holds the server: it is asked, through the database, to do it.
   */
  async syncNow(
    serverId: string,
    signal = new AbortController().signal,
  ): Promise<ReconcileSummary | undefined> {
    await this.deps.servers.get(serverId);
    const held = await this.deps.leases.claim([serverId]);
    if (!held.has(serverId)) {
      await this.deps.state.update(serverId, { full_sync_requested_at: this.#now().toISOString() });
      return undefined;
    }
    // Under the lease like a tick: it stops if the server is handed over, and a handover waits for it.
    const underLease = AbortSignal.any([signal, this.deps.leases.signalFor(serverId)]);
    const work = this.#lock.run(serverId, () => this.#syncHeld(serverId, underLease));
    this.deps.leases.track([serverId], work);
    return work;
  }

  async #syncHeld(serverId: string, signal: AbortSignal): Promise<ReconcileSummary | undefined> {
    const polled = await this.#pollAndWatch(serverId);
    if (polled === undefined) throw new NotFoundError("server", serverId);
    if (polled.error !== undefined) throw polled.error;
    if (polled.connected === undefined)
      throw new CoreUnavailableError(`core of server ${serverId} did not answer`);
    // Asked by an operator, maybe right after an upgrade: the layout is asked again too.
    const { connected } = await this.deps.sync.redetect(serverId);
    const state = await this.deps.state.find(serverId);
    const canList = connected.capabilities.includes("listing") && !isLayoutChanged(state, connected.layout);
    const decision: Full = {
      mode: "full",
      observe: canList ? "listed" : "unknown",
      reason: "sync requested",
    };
    return this.#reconcile(serverId, connected, decision, polled.startedAtMs, false, signal);
  }

  /** What the database remembers about the server's core and its last reconcile. */
  state(serverId: string): Promise<ServerSyncState> {
    return this.deps.state.find(serverId);
  }

  /** The last reconcile this instance ran for the server (benchmarks, diagnostics). */
  lastSummary(serverId: string): ReconcileSummary | undefined {
    return this.#last.get(serverId);
  }

  /** This instance no longer acts for the server: its watch starts afresh if it comes back. */
  forget(serverId: string): void {
    this.#watches.delete(serverId);
    this.#timers.delete(serverId);
    this.#last.delete(serverId);
    this.#resumable.delete(serverId);
  }

  async #tick(serverId: string, signal: AbortSignal): Promise<ReconcileSummary | undefined> {
    const polled = await this.#pollAndWatch(serverId);
    if (polled?.connected === undefined || polled.startedAtMs === undefined) return undefined;
    const timers = this.#timersOf(serverId);
    const nowMs = this.#now().getTime();
    const retryErrors = nowMs >= timers.errorRetryAtMs;
    const state = await this.deps.state.find(serverId);
    const appliedStartedAtMs =
      state.appliedCoreStartedAt === null ? null : Date.parse(state.appliedCoreStartedAt);
    const recheck = !polled.connected.isFresh && shouldRecheckLayout(polled.verdict, appliedStartedAtMs);
    const connected = recheck ? await this.#recheckLayout(serverId) : polled.connected;
    if (connected === undefined) return undefined;
    const decision = decideTick({
      verdict: polled.verdict,
      canList: connected.capabilities.includes("listing"),
      isLayoutChanged: isLayoutChanged(state, connected.layout),
      appliedStartedAtMs,
      isFullSyncRequested: state.fullSyncRequestedAt !== null,
      isAuditDue: nowMs >= timers.auditAtMs,
      hasWork: await this.deps.state.hasWork(serverId, retryErrors),
      resumableAtMs: this.#resumableAt(serverId, connected.layout),
    });
    if (decision.mode === "none") return undefined;
    if (retryErrors) timers.errorRetryAtMs = nowMs + ERROR_RETRY_INTERVAL_MS;
    if (decision.mode === "full" && decision.observe === "listed")
      timers.auditAtMs = nowMs + AUDIT_INTERVAL_MS;
    return this.#reconcile(serverId, connected, decision, polled.startedAtMs, retryErrors, signal);
  }

  /**
   * The layout probe on a new (or returning) core process. A core that answers GetSysStats but not
   * the probe as any known release would is left alone (status error, nothing sent) until it does.
   */
  async #recheckLayout(serverId: string): Promise<Connected | undefined> {
    try {
      return (await this.deps.sync.redetect(serverId)).connected;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error instanceof NotFoundError) return undefined;
      this.deps.logger.warn({ server_id: serverId, code: error.code }, "wire layout not detected");
      const status = error instanceof CoreDownError ? "offline" : "error";
      await this.deps.servers.recordObserved(serverId, status, error.message);
      return undefined;
    }
  }

  /** GetSysStats, folded into the watch; the server's status follows what it saw. */
  async #pollAndWatch(serverId: string) {
    const polled = await this.#poll(serverId);
    if (polled === undefined) {
      this.forget(serverId);
      return undefined;
    }
    const verdict = observe(this.#watches.get(serverId) ?? NEW_WATCH, polled.poll);
    this.#watches.set(serverId, verdict.watch);
    const stored = await this.deps.servers.get(serverId).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
    if (stored === undefined) return undefined; // deleted meanwhile
    if (statusToWrite(stored, verdict))
      await this.deps.servers.recordObserved(serverId, verdict.status, verdict.error);
    return { ...polled, verdict, startedAtMs: verdict.startedAtMs };
  }

  async #poll(
    serverId: string,
  ): Promise<{ poll: CorePoll; connected?: Connected; error?: AppError } | undefined> {
    try {
      const connected = await this.deps.sync.connect(serverId);
      const sys = await connected.client.getSysStats();
      const atMs = this.#now().getTime();
      return {
        poll: { ok: true, atMs, uptimeSeconds: sys.uptimeSeconds, totalAllocBytes: sys.totalAllocBytes },
        connected,
      };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error instanceof NotFoundError) return undefined; // the server was deleted
      return {
        poll: {
          ok: false,
          atMs: this.#now().getTime(),
          isDown: error instanceof CoreDownError,
          message: error.message,
        },
        error,
      };
    }
  }

  async #reconcile(
    serverId: string,
    connected: Connected,
    decision: Full,
    startedAtMs: number | undefined,
    retryErrors: boolean,
    signal: AbortSignal,
  ): Promise<ReconcileSummary> {
    const startedMs = performance.now();
    let result: ExecutionResult;
    try {
      if (decision.mode === "full" && decision.observe !== "listed" && startedAtMs !== undefined)
        await this.#beginFullApply(serverId, { startedAtMs, layout: connected.layout });
      result = await this.#execute(serverId, connected, decision, retryErrors, signal);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      result = { inbounds: 0, users: 0, removed: 0, isIncomplete: true, errors: [failure(error)] };
    }
    await this.#record(serverId, connected.layout, decision, result, startedAtMs);
    const summary: ReconcileSummary = {
      mode: decision.mode,
      reason: decision.reason,
      inbounds: result.inbounds,
      users: result.users,
      removed: result.removed,
      duration_ms: Math.round(performance.now() - startedMs),
      errors: result.errors,
      is_complete: !result.isIncomplete,
    };
    this.#last.set(serverId, summary);
    this.deps.logger.info({ server_id: serverId, ...summary, errors: summary.errors.length }, "reconciled");
    return summary;
  }

  async #execute(
    serverId: string,
    connected: Connected,
    decision: Full,
    retryErrors: boolean,
    signal: AbortSignal,
  ) {
    const { client, flavor } = connected;
    const scope =
      decision.mode === "full"
        ? { kind: "all" as const }
        : { kind: "unsynced" as const, withErrors: retryErrors };
    const snapshot = await readDesired(this.deps, serverId, flavor, scope);
    const limit = limiter(USER_PUSH_PARALLELISM);
    let observed: Observed;
    if (decision.mode === "incremental") observed = { kind: "tracked", retryErrors };
    else if (decision.observe === "listed") {
      observed = { kind: "listed", inbounds: await listManaged(client, snapshot.server, limit) };
    } else observed = { kind: decision.observe };
    const actions = planReconcile(snapshot.server, observed);
    const { inbounds, grants, removals, sync } = this.deps;
    return executePlan(actions, {
      ...{ client, sync, inbounds, grants, removals, limit, signal, now: this.#now },
      recorder: new SyncRecorder(grants, removals),
      skipSettled: decision.mode === "incremental",
      planned: snapshot.planned,
      grantsOf: snapshot.grantsOf,
    });
  }

  /**
   * Before a full apply on a core that cannot be listed: every active inbound is marked pending (the
   * core's copy is not known to be this database's any more), so that whatever the apply gets through
   * is recorded synced and the rest stays pending. If the core stops answering halfway, the next tick
   * resumes from the rows (an incremental reconcile) instead of replacing every inbound again.
   */
  async #beginFullApply(serverId: string, resumable: Resumable): Promise<void> {
    const ids = (await this.deps.inbounds.listByServer(serverId))
      .filter((inbound) => inbound.is_active && inbound.sync_state !== "pending")
      .map((inbound) => inbound.id);
    await this.deps.inbounds.setSyncStateMany(ids, "pending", null);
    await this.deps.state.update(serverId, { full_sync_requested_at: null });
    this.#resumable.set(serverId, resumable);
  }

  #resumableAt(serverId: string, layout: WireLayout): number | null {
    const resumable = this.#resumable.get(serverId);
    return resumable !== undefined && resumable.layout === layout ? resumable.startedAtMs : null;
  }

  /**
   * A complete full reconcile (or the resume that finished one) marks the core process as holding
   * the whole desired state, in `layout`.
   */
  async #record(
    serverId: string,
    layout: WireLayout,
    decision: Full,
    result: ExecutionResult,
    startedAtMs: number | undefined,
  ) {
    const isWhole =
      decision.mode === "full" || (decision.mode === "incremental" && decision.resumes === true);
    const isFullDone = isWhole && !result.isIncomplete && startedAtMs !== undefined;
    if (isFullDone) this.#resumable.delete(serverId);
    const applied = isFullDone ? new Date(startedAtMs).toISOString() : undefined;
    const full = {
      applied_core_started_at: applied,
      applied_wire_layout: layout,
      full_sync_requested_at: null,
    };
    await this.deps.state
      .update(serverId, {
        last_reconciled_at: this.#now().toISOString(),
        last_reconcile_error: result.errors[0]?.message ?? null,
        ...(applied === undefined ? {} : full),
      })
      .catch((error: unknown) => {
        // The server was deleted meanwhile (its row is gone); anything else is worth a log line.
        this.deps.logger.warn({ server_id: serverId, err: error }, "reconcile outcome not recorded");
      });
  }

  #timersOf(serverId: string): Timers {
    const timers = this.#timers.get(serverId) ?? { auditAtMs: 0, errorRetryAtMs: 0 };
    this.#timers.set(serverId, timers);
    return timers;
  }
}

/** The full state was applied with another layout than the core speaks now. */
function isLayoutChanged(state: ServerSyncState, layout: WireLayout): boolean {
  return state.appliedWireLayout !== null && state.appliedWireLayout !== layout;
}

function failure(error: AppError): ActionError {
  return { tag: "", email: null, code: error.code, message: error.message };
}
