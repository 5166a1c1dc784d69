// The lifecycle job's use case: one tick of lifecycle.repository.ts at the injected clock's time, then
// what it changed told onwards: userStatusChanged for users who gained or lost their place on the
// cores (provisioning wakes the reconciler), and the notifications (user.activated, user.limited,
// user.expired, user.usage_threshold, user.expiring) written to the outbox in batches.
import type { Changes } from "../../lib/events.ts";
import type { LifecycleRepository, LifecycleRow, TickResult } from "./lifecycle.repository.ts";
import type { LifecycleOptions } from "./lifecycle.ts";

export type NotifyMany = (
  type: "user.activated" | "user.limited" | "user.expired" | "user.usage_threshold" | "user.expiring",
  datas: readonly Record<string, unknown>[],
) => Promise<void>;

export class LifecycleService {
  /** Ticks of this instance run one after another (the job's and the one after each collection). */
  #running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly repository: LifecycleRepository,
    private readonly options: LifecycleOptions,
    private readonly now: () => Date = () => new Date(),
    private readonly notify: NotifyMany = async () => {},
    private readonly changes?: Changes,
    /** Runs after each tick: the next plans of users this or an earlier tick limited or expired. */
    private readonly afterTick: () => Promise<unknown> = async () => {},
  ) {}

  tick(): Promise<TickResult> {
    const run = this.#running.then(() => this.#tick());
    this.#running = run.catch(() => undefined);
    return run;
  }

  async #tick(): Promise<TickResult> {
    const now = this.now();
    const result = await this.repository.tick(now, this.options);
    const moved = [
      ...result.limited,
      ...result.expired,
      ...result.activated.filter((row) => row.from !== "on_hold"),
    ].map((row) => row.id);
    if (moved.length > 0) await this.changes?.emit("userStatusChanged", moved);
    await this.notify(
      "user.activated",
      result.activated.map(({ from, ...user }) => ({ user, previous_status: from })),
    );
    await this.notify(
      "user.limited",
      result.limited.map((user) => ({ user })),
    );
    await this.notify(
      "user.expired",
      result.expired.map((user) => ({ user })),
    );
    await this.notify(
      "user.usage_threshold",
      result.thresholds.map(({ percent, ...user }) => ({ user, percent })),
    );
    await this.notify(
      "user.expiring",
      result.expiring.map((user) => ({ user, days_left: daysLeft(user.expire_at, now) })),
    );
    await this.afterTick();
    return result;
  }

  /** Traffic started these on_hold users' clocks: user.activated for each. */
  async clocksStarted(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const rows: LifecycleRow[] = await this.repository.rowsOf(ids);
    await this.notify(
      "user.activated",
      rows.map((user) => ({ user, previous_status: "on_hold" })),
    );
  }
}

/** Whole days until expire_at, rounded up (1 for anything within the next 24 hours). */
function daysLeft(expireAt: string | null, now: Date): number {
  return expireAt === null ? 0 : Math.ceil((Date.parse(expireAt) - now.getTime()) / 86_400_000);
}
