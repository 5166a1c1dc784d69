// The subscription engine: every user's subscription kept as compact values in memory (the index:
// records in pages outside the JS heap, layouts shared by users with the same inbounds), told what
// changed by the change feed, its traffic totals kept current (the sweep), /sub fetches noted and
// written in batches (the fetch log). It knows no HTTP, no format and no other feature
// (test/support/architecture.ts): it reads through a SubscriptionSource (the feature's repository),
// is told how a user's rows become a record (`entryOf`) and what a layout compiles to (the index's
// `compile`), and answers with the addresses of records, which the feature renders (answer.ts) from
// the record's bytes (user-record.ts) and its layout's templates.

import { setImmediate as yieldToRequests } from "node:timers/promises";
import type { Logger } from "pino";
import { syncBreather } from "../../../lib/breather.ts";
import { DatabaseUnavailableError } from "../../../lib/errors.ts";
import { type Change, ChangeFeed, type ChangeSource } from "./change-feed.ts";
import { FetchLog, type FetchRecord, markFetch } from "./fetch-log.ts";
import type { Compiled, InboundRef, Layout } from "./layouts.ts";
import type { IndexStats, SubscriptionIndex } from "./subscription-index.ts";
import { KEY, type RecordInput, splitUsage } from "./user-record.ts";

/** Where the totals sweep's walk over users goes on. */
export type SweepCursor = number | string;
/** Where the warm-up's walk over users (by created_at, id) goes on. */
export type WarmCursor = { createdAt: string | Date; id: string };

/** What the engine needs of a user's rows: the inbounds of their grants (the rest is `entryOf`'s). */
export type EngineUser = { userId: string; grants: readonly { inboundId: string }[] };

/** The reads and writes of the engine (the feature's repository). */
export interface SubscriptionSource<P, U extends EngineUser> extends ChangeSource {
  listSubscriptionsAfter(
    after: WarmCursor | undefined,
    limit: number,
  ): Promise<{ users: U[]; next: WarmCursor | undefined }>;
  listInbounds(ids: readonly string[]): Promise<{ id: string; isActive: boolean; linkParams: P }[]>;
  countUsers(): Promise<number>;
  listUsedAfter(
    after: SweepCursor | undefined,
    limit: number,
  ): Promise<{ rows: { userId: string; usedBytes: number }[]; next: SweepCursor | undefined }>;
  listTotals(
    ids: readonly string[],
  ): Promise<{ userId: string; usedBytes: number; uplinkBytes: number; downlinkBytes: number }[]>;
  recordFetches(fetches: readonly FetchRecord[]): Promise<void>;
  deleteChangesOlderThan(seconds: number): Promise<number>;
}

/** A user's record as the index takes it, and the refs of its entries in order. */
export type Entry<P> = { input: Omit<RecordInput, "layoutSlot">; grantRefs: InboundRef<P>[] };

/** A record to render: its bytes at page[at] and its layout. */
export type RecordView<P, C extends Compiled> = { page: Buffer; at: number; layout: Layout<P, C> };

export type EngineOptions<P, U extends EngineUser> = {
  /** A record whose traffic totals are older than this is read again. */
  maxAgeMs: number;
  /** How often the job calls refreshTotals(): a pass of the sweep leaves room for two of them. */
  sweepIntervalMs: number;
  now: () => number;
  /** The user's record and the refs of its entries (the feature decides: grants, or a placeholder). */
  entryOf: (user: U, refs: ReadonlyMap<string, InboundRef<P>>) => Entry<P>;
  /** A change that names neither a user nor an inbound: the settings changed (migration 0014). */
  onSettingsChanged: () => void;
};

export type EngineStats = IndexStats & { misses: number };

/** Changes are kept this long for other instances; an instance that could not read them for half of it starts over. */
export const CHANGES_RETENTION_SECONDS = 600;
/**
 * Users per read of the warm-up. It runs beside a cold start's reconciles: a read of 1,000 users with
 * their grants took 60–390 ms of SQLite under load, a stall for every request; 250 is a quarter of
 * that, and each read waits its turn of the event loop with the reconciles' (lib/breather.ts).
 */
const WARM_USERS_PER_BATCH = 250;
const WARM_RETRIES_PER_BATCH = 3;
/**
 * Users per read of the totals sweep (their used_bytes), requests answered between two: about 1.2 ms
 * a read on SQLite (better-sqlite3 holds the event loop meanwhile) and on PostgreSQL at 100,000 users.
 */
const TOTALS_PER_BATCH = 500;
/** What one call of the sweep may spend (the rest is owed to the next): the job's catch-up waits for it. */
const TOTALS_BUDGET_MS = 100;
/** Room a pass leaves, besides two calls' intervals, for calls that come late (a loaded event loop). */
const SWEEP_SLACK_MS = 1000;

/**
 * How long a pass of the totals sweep takes: three quarters of the max age, or less when the max age
 * is short, so that a record is read again before it ages out. A record read at time r is fresh until
 * at least r + the max age (its loaded-at second is the read's, and fresh means at most the max age in
 * whole seconds), and a user's two reads are at most a pass plus two call intervals apart (a call
 * reads whom the time since the last one owes, so a read comes up to an interval late, and a pass
 * ends within a call, the next one starting with the call after). So a pass takes at most the max age
 * minus two intervals and SWEEP_SLACK_MS, and at least a quarter of the max age (shorter settings
 * than that cannot be kept under load). At the defaults (300 s, 1 s): 225 s; 6 s and 1 s: 3 s.
 */
export function sweepPassMs(maxAgeMs: number, intervalMs: number): number {
  return Math.max(maxAgeMs / 4, Math.min((maxAgeMs * 3) / 4, maxAgeMs - 2 * intervalMs - SWEEP_SLACK_MS));
}

export class SubscriptionEngine<P, C extends Compiled, U extends EngineUser> {
  readonly #feed: ChangeFeed;
  readonly #now: () => number;
  readonly #maxAgeS: number;
  readonly #entryOf: EngineOptions<P, U>["entryOf"];
  readonly #onSettingsChanged: () => void;
  /** False after a failed read of the feed: nothing is stored until one succeeds. */
  #feedHealthy = true;
  #lastCaughtUpMs: number | undefined;
  /** Requests answered by a database read (a render, or 404): however often the index was asked first. */
  #misses = 0;
  /** The clock as the last findKey() read it: the time of the fetch noteFetch() notes. */
  #lookupMs = 0;
  /** /sub fetches not written yet (flushFetches()). */
  readonly fetches: FetchLog;
  /**
   * The totals sweep (refreshTotals()): where its walk goes on (undefined: a pass starts), the users
   * in the table when the pass started, the users owed, and when it last ran.
   */
  #sweepAfter: SweepCursor | undefined;
  #passUsers: number | undefined;
  #sweepOwed = 0;
  /** When the sweep's pace was last taken; first the engine's start, so the warm-up's records are owed. */
  #sweptAtMs: number;
  readonly #sweepPassMs: number;

  constructor(
    private readonly source: SubscriptionSource<P, U>,
    readonly index: SubscriptionIndex<P, C>,
    private readonly logger: Logger,
    options: EngineOptions<P, U>,
  ) {
    this.#now = options.now;
    this.#entryOf = options.entryOf;
    this.#onSettingsChanged = options.onSettingsChanged;
    this.fetches = new FetchLog(options.now);
    this.#feed = new ChangeFeed(source, (changes) => this.#apply(changes));
    this.#maxAgeS = Math.floor(options.maxAgeMs / 1000);
    this.#sweepPassMs = sweepPassMs(this.#maxAgeS * 1000, options.sweepIntervalMs);
    this.#sweptAtMs = this.#now();
  }

  /**
   * Where the current record of the lowercase uuid at text[from, from + 36) is, or -1. A record
   * whose traffic totals are older than the maximum age is not current: its links are still right
   * (changes invalidate it), but its totals may not be.
   */
  find(text: string, from = 0): number {
    return this.index.find(text, from, Math.floor(this.#now() / 1000) - this.#maxAgeS);
  }

  /**
   * The current record of the key at text[from, from + length): a lowercase uuid (when `byId`) or a
   * sub token; -1 when there is none in memory, NOT_BY_ID for a revoked user's id.
   */
  findKey(text: string, from: number, length: number, byId: boolean): number {
    const nowMs = this.#now();
    this.#lookupMs = nowMs;
    const notBeforeS = Math.floor(nowMs / 1000) - this.#maxAgeS;
    if (length === 36) return byId ? this.index.find(text, from, notBeforeS) : -1;
    if (length === 32) return this.index.findToken(text, from, notBeforeS);
    return -1;
  }

  /** A record kept through a database outage, however old (index.findAnyAge()). */
  findAnyAge(key: string, isId: boolean): number {
    return this.index.findAnyAge(key, isId);
  }

  /** The record at an address (from find or findKey) to render. */
  view(address: number): RecordView<P, C> {
    const { index } = this;
    return { page: index.page(address), at: index.offset(address), layout: index.layoutAt(address) };
  }

  /**
   * A miss: reads one user with `read` and keeps their record when it can. The user's rows and the
   * record to render (kept, or made for this render alone); undefined when `read` found nobody.
   */
  async load(
    read: () => Promise<U | undefined>,
  ): Promise<{ user: U; entry: Entry<P>; view: RecordView<P, C> } | undefined> {
    await this.#feed.ready();
    const generation = this.index.generation;
    this.#misses++;
    const user = await read();
    if (user === undefined) return undefined;
    const refs = await this.#inbounds([user], generation);
    const entry = this.#entryOf(user, refs);
    const address = this.#canStore() ? this.index.store(entry.input, entry.grantRefs, generation) : -1;
    const view = address >= 0 ? this.view(address) : this.index.transient(entry.input, entry.grantRefs);
    return { user, entry, view };
  }

  /**
   * Records a fetch of the record at `address`, just found by findKey() (fast path and route): no
   * allocation, no clock read, written in batches; a client's repeated fetches within
   * FETCH_RESOLUTION_S are noted once (fetch-log.ts).
   */
  noteFetch(address: number, userAgent: string | undefined): void {
    const page = this.index.page(address);
    const at = this.index.offset(address);
    if (markFetch(page, at, Math.floor(this.#lookupMs / 1000), userAgent))
      this.fetches.noteBytes(page, at + KEY, this.#lookupMs, userAgent);
  }

  /**
   * Writes the fetches noted since the last flush (the job every few seconds, within `budgetMs`: the
   * rest waits for the next; at shutdown all of them); how many users were written.
   */
  flushFetches(budgetMs?: number): Promise<number> {
    return this.fetches.flush((rows) => this.source.recordFetches(rows), budgetMs);
  }

  /** Sets the feed's starting point once (before anything is stored). */
  ready(): Promise<void> {
    return this.#feed.ready();
  }

  /**
   * Applies every change committed before the call, then runs `then` (the feature reads its settings
   * again there). A failed read empties the index instead, but for a database that is unavailable:
   * then nothing can change (every write goes through it), so what is in memory is kept and keeps
   * answering (nothing new is stored meanwhile), and the feed goes on from its watermark once the
   * database is back, applying what was committed before the outage and not read yet. An outage
   * longer than half the changes' retention empties it then.
   */
  async catchUp(then: () => Promise<void> = async () => {}): Promise<void> {
    try {
      await this.#feed.catchUp();
      await then();
      const now = this.#now();
      const gapMs = now - (this.#lastCaughtUpMs ?? now);
      if (gapMs > (CHANGES_RETENTION_SECONDS * 1000) / 2) this.index.clear();
      this.#lastCaughtUpMs = now;
      this.#feedHealthy = true;
    } catch (error) {
      this.#feedHealthy = false;
      if (error instanceof DatabaseUnavailableError) {
        this.logger.warn(
          { err: error },
          "database unavailable: subscriptions in memory kept until it is back",
        );
        return;
      }
      this.index.clear();
      this.logger.warn({ err: error }, "subscription changes not read; subscriptions in memory dropped");
    }
  }

  /** Reads the inbounds of stale layouts again and revives those layouts (the job, after catchUp). */
  async reviveLayouts(): Promise<number> {
    const ids = this.index.staleInbounds();
    if (ids.length === 0 || !this.#canStore()) return 0;
    const generation = this.index.generation;
    const rows = await this.source.listInbounds(ids);
    this.index.adoptInbounds(rows.map(refOf), generation);
    return this.index.reviveLayouts();
  }

  /**
   * Reads every user into memory, oldest first, until all are there or the budget is full (after a
   * start). `betweenBatches` runs after each batch is stored (the job collects garbage there).
   */
  async warm(signal: AbortSignal, betweenBatches: () => void = () => {}): Promise<number> {
    await this.#feed.ready();
    let after: WarmCursor | undefined;
    let warmed = 0;
    for (let retries = 0; !signal.aborted && !this.index.isFull(); ) {
      const generation = this.index.generation;
      const page = await this.source.listSubscriptionsAfter(after, WARM_USERS_PER_BATCH);
      if (page.next === undefined) break;
      const missing = page.users.filter((user) => !this.index.has(user.userId));
      warmed += await this.#store(missing, generation);
      // Something changed while this batch was read: read it again (a few times at most).
      if (this.index.generation !== generation && retries < WARM_RETRIES_PER_BATCH) retries++;
      else [after, retries] = [page.next, 0];
      betweenBatches();
      await syncBreather.turn();
    }
    return warmed;
  }

  /**
   * Keeps the traffic totals in memory current, so that records do not reach the max age while their
   * user polls: reads every user's used_bytes again (in the table's order, TOTALS_PER_BATCH a read) at a pace that
   * passes over all of them (as counted when the pass starts) in three quarters of the max age, or
   * less for a short one (sweepPassMs()); the pace is taken from the engine's start. A
   * record loaded before the read began whose upload + download make that used_bytes counts as loaded
   * when the read began; for the others the sums of their active grants' counters are read (summed in
   * SQL: 13 µs a user on SQLite, against 27 for reading the grants as a miss does) and the split is
   * written in place. The job calls it every sync interval; a call owes the users of the time since
   * the last one (at most a pass) and spends at most TOTALS_BUDGET_MS on them (the rest waits).
   * Nothing else in a record changes without a change row, so a refreshed record is as right as a new
   * one. Returns how many records were refreshed.
   */
  async refreshTotals(): Promise<number> {
    const nowMs = this.#now();
    const elapsedMs = Math.max(0, nowMs - this.#sweptAtMs);
    this.#sweptAtMs = nowMs;
    if (!this.#canStore() || this.index.stats().entries === 0) return 0; // nothing to keep current
    this.#passUsers ??= await this.source.countUsers();
    this.#sweepOwed = Math.min(
      this.#passUsers,
      this.#sweepOwed + (this.#passUsers * elapsedMs) / this.#sweepPassMs,
    );
    let refreshed = 0;
    const deadline = performance.now() + TOTALS_BUDGET_MS;
    while (this.#sweepOwed >= 1 && performance.now() < deadline) {
      const limit = Math.min(TOTALS_PER_BATCH, Math.ceil(this.#sweepOwed));
      const readAtS = Math.floor(this.#now() / 1000);
      const { rows, next } = await this.source.listUsedAfter(this.#sweepAfter, limit);
      this.#sweepOwed -= limit;
      const changed: string[] = [];
      for (const row of rows) {
        const outcome = this.index.refreshUsed(row.userId, row.usedBytes, readAtS);
        if (outcome === "refreshed") refreshed++;
        else if (outcome === "changed") changed.push(row.userId);
      }
      if (changed.length > 0) {
        const splitAtS = Math.floor(this.#now() / 1000);
        for (const row of await this.source.listTotals(changed)) {
          const [upload, download] = splitUsage(row.usedBytes, row.uplinkBytes, row.downlinkBytes);
          if (this.index.refreshTotals(row.userId, upload, download, splitAtS)) refreshed++;
        }
      }
      if (rows.length < limit) {
        // The end of the users: the next call starts a pass (one pass a call at most).
        [this.#sweepAfter, this.#passUsers, this.#sweepOwed] = [undefined, undefined, 0];
        break;
      }
      this.#sweepAfter = next;
      await yieldToRequests();
    }
    return refreshed;
  }

  /** Deletes changes every instance has read (the job calls it now and then). */
  pruneChanges(): Promise<number> {
    return this.source.deleteChangesOlderThan(CHANGES_RETENTION_SECONDS);
  }

  /** Forgets every record (the settings' placeholder texts changed: records hold them). */
  clear(): void {
    this.index.clear();
  }

  stats(): EngineStats {
    return { ...this.index.stats(), misses: this.#misses };
  }

  #canStore(): boolean {
    return this.#feed.isReady && this.#feedHealthy;
  }

  #apply(changes: readonly Change[]): void {
    for (const change of changes) {
      // Neither user nor inbound: the settings changed (migration 0014); the feature reads them again.
      if (change.userId === null && change.inboundId === null) this.#onSettingsChanged();
      if (change.userId !== null) this.index.dropUser(change.userId);
      if (change.inboundId !== null) this.index.dropInbound(change.inboundId);
    }
  }

  /** Keeps each user's record unless something was invalidated since `generation`; how many were kept. */
  async #store(users: readonly U[], generation: number): Promise<number> {
    if (!this.#canStore()) return 0;
    const refs = await this.#inbounds(users, generation);
    let stored = 0;
    for (const user of users) {
      const { input, grantRefs } = this.#entryOf(user, refs);
      if (this.index.store(input, grantRefs, generation) >= 0) stored++;
    }
    return stored;
  }

  /** The inbounds of these users' grants: shared refs where the index has them, the rest read once. */
  async #inbounds(users: readonly U[], generation: number): Promise<Map<string, InboundRef<P>>> {
    const refs = new Map<string, InboundRef<P>>();
    const missing = new Set<string>();
    for (const user of users) {
      for (const { inboundId } of user.grants) {
        const known = this.index.inbound(inboundId);
        if (known !== undefined) refs.set(inboundId, known);
        else missing.add(inboundId);
      }
    }
    if (missing.size === 0) return refs;
    const rows = await this.source.listInbounds([...missing]);
    for (const ref of this.index.adoptInbounds(rows.map(refOf), generation)) refs.set(ref.id, ref);
    return refs;
  }
}

function refOf<P>(row: { id: string; isActive: boolean; linkParams: P }): InboundRef<P> {
  return { id: row.id, params: row.isActive ? row.linkParams : null, isStale: false };
}

/** A grant whose inbound row is gone (deleted while this read ran; its change follows). */
export function missingInbound<P>(id: string): InboundRef<P> {
  return { id, params: null, isStale: true };
}
