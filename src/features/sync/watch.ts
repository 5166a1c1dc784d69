// Restart detection and the reconcile decision of one tick, as pure functions of the polls and an
// injected clock. A core's start time (poll time - uptime) identifies its process: a later start
// than the last poll, or than the process that last received the full state, means the core lost
// everything Portcullis added (probe §8).

/** Uptime is whole seconds and two clocks are read at slightly different moments. */
export const RESTART_SLACK_MS = 2000;

export type CorePoll =
  | { ok: true; atMs: number; uptimeSeconds: number; totalAllocBytes: number }
  /** isDown: unreachable or timed out (CoreDownError), as opposed to refused. */
  | { ok: false; atMs: number; isDown: boolean; message: string };

/** What a tick remembers about a core between polls (in memory, per instance). */
export type CoreWatch = {
  last: { atMs: number; uptimeSeconds: number; totalAllocBytes: number } | undefined;
  isDown: boolean;
};

export type ObservedStatus = "online" | "offline" | "error";

export type WatchVerdict = {
  watch: CoreWatch;
  status: ObservedStatus;
  error: string | null;
  /** The core process is not the one of the previous poll. */
  restarted: boolean;
  /** Answered after the previous poll failed (or this is the first poll of this instance). */
  cameBack: boolean;
  /** When the current core process started, ms since the epoch; undefined when it did not answer. */
  startedAtMs: number | undefined;
};

export const NEW_WATCH: CoreWatch = { last: undefined, isDown: true };

export function coreStartedAtMs(poll: { atMs: number; uptimeSeconds: number }): number {
  return poll.atMs - poll.uptimeSeconds * 1000;
}

/** Uptime went backwards against the last poll plus the time since, or Go's TotalAlloc went down. */
export function hasRestarted(
  last: { atMs: number; uptimeSeconds: number; totalAllocBytes: number },
  now: { atMs: number; uptimeSeconds: number; totalAllocBytes: number },
  slackMs = RESTART_SLACK_MS,
): boolean {
  const expectedUptimeMs = last.uptimeSeconds * 1000 + (now.atMs - last.atMs);
  return now.uptimeSeconds * 1000 + slackMs < expectedUptimeMs || now.totalAllocBytes < last.totalAllocBytes;
}

export function sameProcess(
  startedAtMs: number,
  otherStartedAtMs: number,
  slackMs = RESTART_SLACK_MS,
): boolean {
  return Math.abs(startedAtMs - otherStartedAtMs) <= slackMs;
}

/** Folds one poll into the watch. Unreachable or timed out is offline; any other failure is error. */
export function observe(previous: CoreWatch, poll: CorePoll): WatchVerdict {
  if (!poll.ok) {
    const status: ObservedStatus = poll.isDown ? "offline" : "error";
    return {
      watch: { last: previous.last, isDown: true },
      status,
      error: poll.message,
      restarted: false,
      cameBack: false,
      startedAtMs: undefined,
    };
  }
  const current = {
    atMs: poll.atMs,
    uptimeSeconds: poll.uptimeSeconds,
    totalAllocBytes: poll.totalAllocBytes,
  };
  return {
    watch: { last: current, isDown: false },
    status: "online",
    error: null,
    restarted: previous.last !== undefined && hasRestarted(previous.last, current),
    cameBack: previous.isDown,
    startedAtMs: coreStartedAtMs(current),
  };
}

/** The stored status differs from what the poll saw (a PUT, or a failed API call, set it). */
export function statusToWrite(
  stored: { status: string; last_error: string | null },
  verdict: Pick<WatchVerdict, "status" | "error">,
): boolean {
  if (stored.status !== verdict.status) return true;
  return verdict.status === "online" ? stored.last_error !== null : stored.last_error !== verdict.error;
}

/**
 * Whether to ask the core its wire layout again before reconciling: a new process (restart, or a
 * start after the last full apply) or one seen again after an outage may be another release, e.g.
 * Xray upgraded 25.9 -> 26.x in place. The first poll of an instance counts as "seen again".
 */
export function shouldRecheckLayout(verdict: WatchVerdict, appliedStartedAtMs: number | null): boolean {
  if (verdict.startedAtMs === undefined) return false;
  return verdict.restarted || verdict.cameBack || isOtherProcess(verdict.startedAtMs, appliedStartedAtMs);
}

function isOtherProcess(startedAtMs: number, appliedStartedAtMs: number | null): boolean {
  return appliedStartedAtMs !== null && !sameProcess(startedAtMs, appliedStartedAtMs);
}

export type TickInput = {
  verdict: WatchVerdict;
  /** The core answers ListInbounds/GetInboundUsers (Xray 25.x and later): drift can be listed. */
  canList: boolean;
  /** The core's layout differs from the one the full state was applied with: re-apply everything. */
  isLayoutChanged: boolean;
  /** Start time of the core process that last received the full state (persisted); null: never. */
  appliedStartedAtMs: number | null;
  isFullSyncRequested: boolean;
  /** Xray: time for a listing audit that catches drift nobody told Portcullis about. */
  isAuditDue: boolean;
  /** Rows not synced, or queued removals. */
  hasWork: boolean;
  /**
   * This instance began a full apply on a core process that could not be listed and it stopped
   * halfway (the core stopped answering): the start time of that process. Its rows were marked
   * pending first, so they tell what it holds: the rest is added, nothing is replaced again.
   */
  resumableAtMs?: number | null;
};

export type TickDecision =
  | { mode: "none" }
  | { mode: "full"; observe: "listed" | "restarted" | "unknown"; reason: string }
  /** resumes: finishes an interrupted full apply; once complete, the core holds the whole state. */
  | { mode: "incremental"; reason: string; resumes?: boolean };

/**
 * A core that can be listed (Xray 25.x+), so any doubt costs only a listing: a restart, a return
 * after an outage, a first contact. One that cannot (V2Ray 4.x, Xray 1.8/24.x): a full apply there
 * replaces every inbound (listeners reopen, users are re-added), so it happens only when the core
 * provably lost its state or state is unknown. A changed wire layout re-applies everything on any
 * core: what it holds was encoded for other field numbers.
 */
export function decideTick(input: TickInput): TickDecision {
  const { verdict } = input;
  if (verdict.startedAtMs === undefined) return { mode: "none" };
  if (!input.canList && isResumable(input))
    return { mode: "incremental", reason: "resuming an interrupted full apply", resumes: true };
  if (input.isLayoutChanged) return { mode: "full", observe: "unknown", reason: "wire layout changed" };
  const isNewProcess = verdict.restarted || isOtherProcess(verdict.startedAtMs, input.appliedStartedAtMs);
  if (input.canList) {
    const reason = xrayReason(input, isNewProcess);
    if (reason !== undefined) return { mode: "full", observe: "listed", reason };
  } else if (isNewProcess) {
    return { mode: "full", observe: "restarted", reason: "core restarted" };
  } else if (input.appliedStartedAtMs === null || input.isFullSyncRequested) {
    const reason = input.isFullSyncRequested ? "full sync requested" : "core state unknown";
    return { mode: "full", observe: "unknown", reason };
  }
  return input.hasWork ? { mode: "incremental", reason: "changes waiting" } : { mode: "none" };
}

/** The same core process an interrupted full apply was working on, and no full sync asked for since. */
function isResumable(input: TickInput): boolean {
  const { verdict, resumableAtMs } = input;
  if (resumableAtMs === undefined || resumableAtMs === null || verdict.startedAtMs === undefined)
    return false;
  return !verdict.restarted && !input.isFullSyncRequested && sameProcess(verdict.startedAtMs, resumableAtMs);
}

function xrayReason(input: TickInput, isNewProcess: boolean): string | undefined {
  if (isNewProcess) return "core restarted";
  if (input.verdict.cameBack) return "core reachable again";
  if (input.appliedStartedAtMs === null) return "core state unknown";
  if (input.isFullSyncRequested) return "full sync requested";
  if (input.isAuditDue) return "audit";
  return undefined;
}
