// Follows the subscription_changes table (migration 0008) and hands each change to the cache once.
// On SQLite rows become visible in seq order. On PostgreSQL they do not (seq is drawn before commit),
// so rows are read by transaction id from a watermark: every id below a snapshot's xmin is final,
// rows at or above it may still be joined by late commits and are read again, remembered by seq so
// they are applied once.

export type Change = {
  seq: number;
  /** Transaction id on PostgreSQL, seq on SQLite: what the watermark is compared with. */
  order: number;
  userId: string | null;
  inboundId: string | null;
};

export type ChangesRead = {
  /** Every visible change with order >= the watermark asked for. */
  changes: Change[];
  /** Every change with order below this is final: no more can appear there. */
  settled: number;
};

export interface ChangeSource {
  /** The watermark to start from: changes committed before this call are not needed. */
  startingPoint(): Promise<number>;
  changesFrom(watermark: number): Promise<ChangesRead>;
}

export type FeedCursor = {
  watermark: number;
  /** seq → order of changes at or above the watermark that were applied already. */
  seen: ReadonlyMap<number, number>;
};

/** The changes not applied yet, and the cursor after applying them. */
export function advance(cursor: FeedCursor, read: ChangesRead): { fresh: Change[]; cursor: FeedCursor } {
  const seen = new Map(cursor.seen);
  const fresh: Change[] = [];
  for (const change of read.changes) {
    if (seen.has(change.seq)) continue;
    seen.set(change.seq, change.order);
    fresh.push(change);
  }
  const watermark = Math.max(cursor.watermark, read.settled);
  for (const [seq, order] of seen) if (order < watermark) seen.delete(seq);
  return { fresh, cursor: { watermark, seen } };
}

export class ChangeFeed {
  #cursor: FeedCursor | undefined;
  #starting: Promise<void> | undefined;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  constructor(
    private readonly source: ChangeSource,
    private readonly apply: (changes: readonly Change[]) => void,
  ) {}

  get isReady(): boolean {
    return this.#cursor !== undefined;
  }

  /** Sets the starting watermark once; nothing may be cached before it is set. */
  ready(): Promise<void> {
    this.#starting ??= this.source.startingPoint().then(
      (watermark) => {
        this.#cursor ??= { watermark, seen: new Map() };
      },
      (error: unknown) => {
        this.#starting = undefined;
        throw error;
      },
    );
    return this.#starting;
  }

  /**
   * Applies every change committed before the call. Calls during a read share the next read, which
   * starts after the current one ends, so no caller is answered by a read that began before it.
   */
  catchUp(): Promise<void> {
    if (this.#next !== undefined) return this.#next;
    if (this.#running === undefined) return this.#start();
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    return this.#next;
  }

  #start(): Promise<void> {
    const run = this.#read().finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #read(): Promise<void> {
    await this.ready();
    const cursor = this.#cursor;
    if (cursor === undefined) return;
    const read = await this.source.changesFrom(cursor.watermark);
    const { fresh, cursor: next } = advance(cursor, read);
    this.#cursor = next;
    if (fresh.length > 0) this.apply(fresh);
  }
}
