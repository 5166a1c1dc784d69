// Which servers this instance reconciles and collects traffic for. With several instances on one
// PostgreSQL database the live instances share the servers out (shares.ts over their heartbeats)
// and each server has a lease row (leases.repository.ts) renewed on every reconcile pass by the
// instance whose share it is. A server that leaves an instance's share (another instance joined) is
// handed over: work on it stops at once, and its lease row is deleted only when the work this
// instance had under way there has ended, so the next holder starts after. An instance that dies
// stops renewing and the others take its servers once the leases expire.
// The holder trusts a lease only until `ttl - margin` after it *sent* the renewal, measured on its
// own monotonic clock, so it stops before anyone else can start even if its process stalled.
// SQLite means one process: it holds every server, with no lock at all.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { LeasesRepository } from "./leases.repository.ts";
import { shareOut } from "./shares.ts";

export interface ServerLeases {
  readonly holder: string;
  /**
   * Renews held leases and takes free or expired ones among `serverIds` that are this instance's
   * share; hands over held ones that are not; returns the ones held now.
   */
  claim(serverIds: readonly string[]): Promise<Set<string>>;
  /** Work under way for these servers: a handover waits for it before the next holder may start. */
  track(serverIds: readonly string[], work: Promise<unknown>): void;
  /** Lets go of servers that are gone (deleted), keeping the rest. */
  retain(serverIds: readonly string[]): void;
  /** Whether this instance may act for the server right now. */
  holds(serverId: string): boolean;
  /** Aborted when this instance loses (or gives up) the server. */
  signalFor(serverId: string): AbortSignal;
  /** On shutdown: hand every server over now. */
  release(): Promise<void>;
}

export function instanceName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

/** One process (SQLite): every server is ours, always. */
export class SoleInstance implements ServerLeases {
  readonly holder = instanceName();
  readonly #never = new AbortController().signal;

  async claim(serverIds: readonly string[]): Promise<Set<string>> {
    return new Set(serverIds);
  }
  retain(): void {}
  track(): void {}
  holds(): boolean {
    return true;
  }
  signalFor(): AbortSignal {
    return this.#never;
  }
  async release(): Promise<void> {}
}

type Held = { validUntilMs: number; controller: AbortController; timer: NodeJS.Timeout | undefined };

export type LeaseOptions = {
  ttlMs: number;
  holder?: string;
  /** Wall clock for the expiry written to the database. */
  now?: () => Date;
  /** Monotonic clock for the local validity. */
  monotonicMs?: () => number;
};

export class DatabaseLeases implements ServerLeases {
  readonly holder: string;
  readonly #held = new Map<string, Held>();
  /** Servers given up whose lease row waits for their work to end (not taken again meanwhile). */
  readonly #handingOver = new Set<string>();
  readonly #work = new Map<string, Set<Promise<unknown>>>();
  readonly #ttlMs: number;
  readonly #now: () => Date;
  readonly #monotonicMs: () => number;

  constructor(
    private readonly leases: LeasesRepository,
    options: LeaseOptions,
  ) {
    this.holder = options.holder ?? instanceName();
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? (() => new Date());
    this.#monotonicMs = options.monotonicMs ?? (() => performance.now());
  }

  async claim(serverIds: readonly string[]): Promise<Set<string>> {
    const sentAtMs = this.#monotonicMs();
    const now = this.#now();
    const expiresAt = new Date(now.getTime() + this.#ttlMs).toISOString();
    let taken: string[];
    try {
      const live = await this.leases.announce(this.holder, now.toISOString(), expiresAt);
      const share = new Set(shareOut(live.serverIds, live.instances).get(this.holder));
      const wanted = serverIds.filter((id) => share.has(id) && !this.#handingOver.has(id));
      taken = await this.leases.claim(wanted, this.holder, now.toISOString(), expiresAt);
    } catch (error) {
      this.#expire();
      throw error;
    }
    const validUntilMs = sentAtMs + this.#ttlMs - this.#marginMs();
    const takenSet = new Set(taken);
    for (const id of serverIds) {
      if (takenSet.has(id)) this.#keep(id, validUntilMs);
      else if (this.#held.has(id)) this.#handOver(id);
    }
    this.#expire();
    return new Set([...this.#held.keys()].filter((id) => serverIds.includes(id)));
  }

  track(serverIds: readonly string[], work: Promise<unknown>): void {
    for (const id of serverIds) {
      const pending = this.#work.get(id) ?? new Set();
      pending.add(work);
      this.#work.set(id, pending);
    }
    const done = () => {
      for (const id of serverIds) {
        const pending = this.#work.get(id);
        pending?.delete(work);
        if (pending?.size === 0) this.#work.delete(id);
      }
    };
    work.then(done, done);
  }

  retain(serverIds: readonly string[]): void {
    const keep = new Set(serverIds);
    for (const id of [...this.#held.keys()]) if (!keep.has(id)) this.#drop(id);
  }

  holds(serverId: string): boolean {
    const held = this.#held.get(serverId);
    return held !== undefined && this.#monotonicMs() < held.validUntilMs;
  }

  signalFor(serverId: string): AbortSignal {
    return this.#held.get(serverId)?.controller.signal ?? AbortSignal.abort();
  }

  async release(): Promise<void> {
    for (const id of [...this.#held.keys()]) this.#drop(id);
    await this.leases.release(this.holder);
    await this.leases.leave(this.holder, this.#now().toISOString());
  }

  /**
   * No longer ours (another instance's share now, or taken after our lease ran out): stop acting at
   * once, and delete the lease row only once the work tracked for the server has ended, so the next
   * holder cannot start while this one still talks to the core. If the delete fails the row expires.
   */
  #handOver(id: string): void {
    this.#drop(id);
    this.#handingOver.add(id);
    Promise.allSettled([...(this.#work.get(id) ?? [])])
      .then(() => this.leases.release(this.holder, [id]))
      .catch(() => {})
      .finally(() => this.#handingOver.delete(id));
  }

  /** A third of the lease: room for a slow renewal round trip and for clocks that run apart. */
  #marginMs(): number {
    return Math.floor(this.#ttlMs / 3);
  }

  /** Also arms a timer, so work stops at the deadline even while the database does not answer. */
  #keep(id: string, validUntilMs: number): void {
    const held = this.#held.get(id) ?? { validUntilMs, controller: new AbortController(), timer: undefined };
    held.validUntilMs = validUntilMs;
    clearTimeout(held.timer);
    held.timer = setTimeout(
      () => {
        if (!this.holds(id)) this.#drop(id);
      },
      Math.max(0, validUntilMs - this.#monotonicMs()),
    );
    held.timer.unref();
    this.#held.set(id, held);
  }

  #drop(id: string): void {
    const held = this.#held.get(id);
    clearTimeout(held?.timer);
    held?.controller.abort();
    this.#held.delete(id);
  }

  /** Leases not renewed in time are given up locally, even when the database could not be asked. */
  #expire(): void {
    for (const id of [...this.#held.keys()]) if (!this.holds(id)) this.#drop(id);
  }
}
