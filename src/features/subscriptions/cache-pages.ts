// Where the subscription cache keeps its records: fixed-size pages outside the JS heap, written like
// a log, and an index from user id to address. When the budget is reached the oldest page is swept:
// records read since they were written get a second chance at the head (CLOCK), the rest are
// evicted, and records that were replaced or dropped are simply not copied.
import { isVisited, lengthAt, setVisited, userIdAt } from "./cache-record.ts";

/** Heap bytes per index entry (key string, map slot), measured at 100,000 users (docs/BENCHMARKS.md). */
export const INDEX_ENTRY_BYTES = 100;

export type RecordAt = { page: Buffer; at: number };

export class CachePages {
  readonly #pages: Buffer[] = [];
  readonly #used: number[] = [];
  /** Page numbers from the oldest to the one being written (the last). */
  readonly #order: number[] = [];
  /** user id → page number × page size + offset. */
  readonly #index = new Map<string, number>();
  #evictions = 0;

  constructor(
    private readonly budgetBytes: number,
    readonly pageBytes: number,
    /** Other memory the budget covers (the cache's reference bodies), at most `reservedBytes`. */
    private readonly otherBytes: () => number,
    /** Kept free of pages for that other memory, so the total never exceeds the budget. */
    private readonly reservedBytes: number,
  ) {}

  get entries(): number {
    return this.#index.size;
  }

  get evictions(): number {
    return this.#evictions;
  }

  /** What the budget bounds: pages in use, the estimated index, and the other memory. */
  get bytes(): number {
    return this.#pages.length * this.pageBytes + this.#index.size * INDEX_ENTRY_BYTES + this.otherBytes();
  }

  find(userId: string): RecordAt | undefined {
    const address = this.#index.get(userId);
    if (address === undefined) return undefined;
    return {
      page: this.#pages[Math.floor(address / this.pageBytes)] as Buffer,
      at: address % this.pageBytes,
    };
  }

  has(userId: string): boolean {
    return this.#index.has(userId);
  }

  delete(userId: string): void {
    this.#index.delete(userId);
  }

  /**
   * Room for `length` bytes (sweeping if the budget says so), written by `write`, indexed under the
   * user. false when not even one page fits the budget beside the other memory.
   */
  store(userId: string, length: number, write: (page: Buffer, at: number) => void): boolean {
    const address = this.#allocate(length);
    if (address === undefined) return false;
    write(this.#pages[Math.floor(address / this.pageBytes)] as Buffer, address % this.pageBytes);
    this.#index.set(userId, address);
    return true;
  }

  /** Whether storing `length` more bytes would evict something. */
  isFull(length: number): boolean {
    return !this.#fitsHead(length) && !this.canGrow();
  }

  /** Whether another page fits the budget beside the index and the reserved bytes. */
  canGrow(): boolean {
    return this.pageBytes > 0 && this.#committed() + this.pageBytes <= this.budgetBytes;
  }

  /** Pages, index and the reserve: what must stay within the budget. */
  #committed(): number {
    return this.#pages.length * this.pageBytes + this.#index.size * INDEX_ENTRY_BYTES + this.reservedBytes;
  }

  clear(): void {
    this.#index.clear();
    this.#pages.length = 0;
    this.#used.length = 0;
    this.#order.length = 0;
  }

  #head(): number | undefined {
    return this.#order[this.#order.length - 1];
  }

  /** Whether one more index entry would pass the budget. */
  #isOver(): boolean {
    return this.#committed() + INDEX_ENTRY_BYTES > this.budgetBytes;
  }

  #fitsHead(length: number): boolean {
    const head = this.#head();
    return head !== undefined && (this.#used[head] ?? 0) + length <= this.pageBytes;
  }

  /**
   * Room at the head; a new page while the budget allows, else the oldest page swept and reused.
   * Ends: a sweep clears every record's second chance, so the second sweep of a page empties it.
   */
  #allocate(length: number): number | undefined {
    if (length > this.pageBytes) return undefined;
    // More, smaller records than when the pages were made can grow the index past the budget:
    // sweep (evicting, so the index shrinks) before writing. Two rounds clear every second chance.
    for (let sweeps = 2 * this.#order.length; sweeps > 0 && this.#isOver(); sweeps--) {
      this.#sweep(this.#order.shift() as number);
    }
    for (;;) {
      const head = this.#head();
      if (head !== undefined && this.#fitsHead(length)) {
        const at = this.#used[head] ?? 0;
        this.#used[head] = at + length;
        return head * this.pageBytes + at;
      }
      if (this.canGrow()) {
        this.#pages.push(Buffer.allocUnsafeSlow(this.pageBytes));
        this.#used.push(0);
        this.#order.push(this.#pages.length - 1);
      } else {
        const oldest = this.#order.shift();
        if (oldest === undefined) return undefined; // no page at all, and none fits the budget
        this.#sweep(oldest);
      }
    }
  }

  /** Empties the page into the head position, keeping (once) the records read since they were written. */
  #sweep(pageNumber: number): void {
    const page = this.#pages[pageNumber] as Buffer;
    const kept: { userId: string; bytes: Buffer }[] = [];
    for (let at = 0, end = this.#used[pageNumber] ?? 0; at < end; at += lengthAt(page, at)) {
      const userId = userIdAt(page, at);
      if (this.#index.get(userId) !== pageNumber * this.pageBytes + at) continue;
      this.#index.delete(userId);
      if (!isVisited(page, at)) {
        this.#evictions++;
        continue;
      }
      setVisited(page, at, false);
      kept.push({ userId, bytes: Buffer.from(page.subarray(at, at + lengthAt(page, at))) });
    }
    let at = 0;
    for (const record of kept) {
      record.bytes.copy(page, at);
      this.#index.set(record.userId, pageNumber * this.pageBytes + at);
      at += record.bytes.length;
    }
    this.#used[pageNumber] = at;
    this.#order.push(pageNumber);
  }
}
