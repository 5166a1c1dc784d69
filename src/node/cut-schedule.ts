// Which removed users' open connections the agent cuts, and when. A user removed by name (RemoveUser)
// is gone: cut once the panel's calls settle. A user who left the desired state because their
// inbound was removed is usually coming back: the panel replaces an inbound (RemoveInbound, AddInbound,
// then one AddUser per user) on every full apply to a core that cannot list its state (V2Ray), so for
// a moment every user of that inbound is absent. Cutting then destroyed the sockets of users who were
// never removed (issue 50's open finding: an under-limit user's download stalled after another user's
// block, when the re-adds took longer than the settle time on a loaded machine). Such users are cut
// only if they are still absent once the panel's calls have been quiet for REPLACE_QUIET_MS (the
// re-adds go on calling), and at the latest REPLACE_MAX_WAIT_MS after they were dropped. Pure: the
// agent feeds it the changes it relays and a clock.

/** Users dropped with their inbound are cut only after this long without any change relayed. */
export const REPLACE_QUIET_MS = 1000;
/** However busy the panel keeps the core, a dropped user still absent this long after is cut. */
export const REPLACE_MAX_WAIT_MS = 30_000;

export class CutSchedule {
  /** Emails dropped with their inbound (not by name), with when. */
  readonly #dropped = new Map<string, number>();
  #lastChangeMs = 0;

  /** A change the core accepted: `emailsOfTag` are the users the inbound held before a removal. */
  noteChange(change: { kind: string; email?: string }, emailsOfTag: Iterable<string>, nowMs: number): void {
    this.#lastChangeMs = nowMs;
    if (change.kind === "remove-inbound") {
      for (const email of emailsOfTag) if (!this.#dropped.has(email)) this.#dropped.set(email, nowMs);
    } else if (change.email !== undefined) {
      // added back (nothing to cut), or removed by name (cut on the ordinary schedule)
      this.#dropped.delete(change.email);
    }
  }

  /**
   * Of the users absent from the desired state, those to cut now, and how long to wait before
   * looking again at the ones held back (undefined: none held back).
   */
  due(absent: Iterable<string>, nowMs: number): { cut: string[]; retryInMs: number | undefined } {
    const cut: string[] = [];
    let retryAt: number | undefined;
    for (const email of absent) {
      const droppedAt = this.#dropped.get(email);
      if (droppedAt === undefined) {
        cut.push(email);
        continue;
      }
      const at = Math.min(this.#lastChangeMs + REPLACE_QUIET_MS, droppedAt + REPLACE_MAX_WAIT_MS);
      if (nowMs >= at) {
        cut.push(email);
        this.#dropped.delete(email);
      } else retryAt = retryAt === undefined ? at : Math.min(retryAt, at);
    }
    return { cut, retryInMs: retryAt === undefined ? undefined : retryAt - nowMs };
  }

  /** Forgets dropped users who are present again or no longer seen connected. */
  forgetExcept(absent: ReadonlySet<string>): void {
    for (const email of this.#dropped.keys()) if (!absent.has(email)) this.#dropped.delete(email);
  }
}
