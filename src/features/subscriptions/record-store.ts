// Where the subscription index keeps its user records: fixed-size pages outside the JS heap, written
// like a log, and an open-addressing hash table from a user's id (the uuid's 16 bytes) to where the
// record is. Neither is seen by V8's garbage collector: a million users add a few typed arrays to the
// heap, not a million keys. A record that is replaced or dropped becomes garbage in its page; when no
// page can be added within the budget, the page with the most garbage is compacted in place. Nothing
// is evicted: when even that does not make room, the record is not stored (the caller renders it once
// and says so in the statistics).
import { FLAG_LIVE, FLAGS, KEY, LENGTH, type PreparedRecord, parseUuid, writeRecord } from "./user-record.ts";

const DEFAULT_PAGE_BYTES = 1 << 20;
const MIN_PAGE_BYTES = 1 << 12;
const PAGES_AT_LEAST = 8;
/** The table grows (doubles) beyond this share of occupied slots. */
const MAX_LOAD = 0.7;
const INITIAL_SLOTS = 64;
/** Bytes per table slot: the address and the key's first word. */
const SLOT_BYTES = 8;

/** The last key parsed (16 bytes) and the same bytes as four little-endian words. */
const keyBytes = new Uint8Array(16);
const keyWords = new Uint32Array(keyBytes.buffer);

function hashOf(w0: number, w1: number, w2: number, w3: number): number {
  return Math.imul(w0 ^ Math.imul(w1, 0x85ebca6b) ^ Math.imul(w2, 0xc2b2ae35) ^ w3, 0x9e3779b1) >>> 0;
}

export class RecordStore {
  readonly pageBytes: number;
  readonly #pageShift: number;
  readonly #pages: Buffer[] = [];
  /** The same pages as 32-bit words (records are 8-byte aligned). */
  readonly #words: Uint32Array[] = [];
  readonly #used: number[] = [];
  readonly #garbage: number[] = [];
  #head = -1;
  /**
   * Per slot, side by side so one probe touches one cache line: the record's address + 1 (0: empty)
   * at 2i, the key's first word at 2i + 1.
   */
  #table = new Uint32Array(2 * INITIAL_SLOTS);
  #capacity = INITIAL_SLOTS;
  #count = 0;

  constructor(
    private readonly budgetBytes: number,
    /** Other memory the budget covers (the layouts): pages are added only while both fit. */
    private readonly otherBytes: () => number = () => 0,
    pageBytes = DEFAULT_PAGE_BYTES,
  ) {
    // At least eight pages within the budget, so compaction has pages to choose from.
    let size = pageBytes;
    while (size > MIN_PAGE_BYTES && size * PAGES_AT_LEAST > budgetBytes) size /= 2;
    this.pageBytes = size;
    this.#pageShift = Math.log2(size);
  }

  get entries(): number {
    return this.#count;
  }

  /** Pages and table: what this store takes of the budget. */
  get bytes(): number {
    return this.#pages.length * this.pageBytes + this.#capacity * SLOT_BYTES;
  }

  /** The page an address is in. */
  page(address: number): Buffer {
    return this.#pages[address >>> this.#pageShift] as Buffer;
  }

  offset(address: number): number {
    return address & (this.pageBytes - 1);
  }

  /** Where the record of this lowercase uuid (text[from, from + 36)) is, or -1. */
  findText(text: string, from = 0): number {
    if (!parseUuid(text, from, keyBytes, 0)) return -1;
    return this.#find(
      keyWords[0] as number,
      keyWords[1] as number,
      keyWords[2] as number,
      keyWords[3] as number,
    );
  }

  /** Where the record of the user whose id is these 16 bytes is, or -1. */
  findBytes(key: Uint8Array): number {
    keyBytes.set(key);
    return this.#find(
      keyWords[0] as number,
      keyWords[1] as number,
      keyWords[2] as number,
      keyWords[3] as number,
    );
  }

  #find(w0: number, w1: number, w2: number, w3: number): number {
    const mask = this.#capacity - 1;
    for (let i = hashOf(w0, w1, w2, w3) & mask; ; i = (i + 1) & mask) {
      const value = this.#table[2 * i] as number;
      if (value === 0) return -1;
      if (this.#table[2 * i + 1] === w0 && this.#keyIs(value - 1, w1, w2, w3)) return value - 1;
    }
  }

  #keyIs(address: number, w1: number, w2: number, w3: number): boolean {
    const words = this.#words[address >>> this.#pageShift] as Uint32Array;
    const at = ((address & (this.pageBytes - 1)) + KEY) >>> 2;
    return words[at + 1] === w1 && words[at + 2] === w2 && words[at + 3] === w3;
  }

  /** Stores the record of a user who has none (removeText first); its address, or -1 when it does not fit. */
  insert(record: PreparedRecord): number {
    if (record.length > this.pageBytes || !parseUuid(record.input.userId, 0, keyBytes, 0)) return -1;
    const [w0, w1, w2, w3] = keyWords as unknown as [number, number, number, number];
    if (!this.#reserveSlot()) return -1;
    const address = this.#allocate(record.length);
    if (address < 0) return -1;
    writeRecord(this.page(address), this.offset(address), record);
    this.#place(w0, w1, w2, w3, address);
    return address;
  }

  /** Drops the user's record; the address it had (readable until the next insert), or -1. */
  removeText(text: string): number {
    if (!parseUuid(text, 0, keyBytes, 0)) return -1;
    return this.#remove(
      keyWords[0] as number,
      keyWords[1] as number,
      keyWords[2] as number,
      keyWords[3] as number,
    );
  }

  #remove(w0: number, w1: number, w2: number, w3: number): number {
    const mask = this.#capacity - 1;
    let i = hashOf(w0, w1, w2, w3) & mask;
    for (; ; i = (i + 1) & mask) {
      const value = this.#table[2 * i] as number;
      if (value === 0) return -1;
      if (this.#table[2 * i + 1] === w0 && this.#keyIs(value - 1, w1, w2, w3)) break;
    }
    const address = (this.#table[2 * i] as number) - 1;
    const page = this.page(address);
    const at = this.offset(address);
    page[at + FLAGS] = (page[at + FLAGS] as number) & ~FLAG_LIVE;
    const pageIndex = address >>> this.#pageShift;
    this.#garbage[pageIndex] = (this.#garbage[pageIndex] ?? 0) + page.readUInt32LE(at + LENGTH);
    this.#clearSlot(i);
    this.#count--;
    return address;
  }

  /** Empties slot i and moves later entries of its probe run back (no tombstones). */
  #clearSlot(slot: number): void {
    const mask = this.#capacity - 1;
    let hole = slot;
    const table = this.#table;
    for (let j = (slot + 1) & mask; table[2 * j] !== 0; j = (j + 1) & mask) {
      const home = this.#homeOf((table[2 * j] as number) - 1) & mask;
      // j's entry may move to the hole if its home is not cyclically within (hole, j].
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      table[2 * hole] = table[2 * j] as number;
      table[2 * hole + 1] = table[2 * j + 1] as number;
      hole = j;
    }
    table[2 * hole] = 0;
    table[2 * hole + 1] = 0;
  }

  #homeOf(address: number): number {
    const words = this.#words[address >>> this.#pageShift] as Uint32Array;
    const at = ((address & (this.pageBytes - 1)) + KEY) >>> 2;
    return hashOf(
      words[at] as number,
      words[at + 1] as number,
      words[at + 2] as number,
      words[at + 3] as number,
    );
  }

  #place(w0: number, w1: number, w2: number, w3: number, address: number): void {
    const mask = this.#capacity - 1;
    let i = hashOf(w0, w1, w2, w3) & mask;
    while (this.#table[2 * i] !== 0) i = (i + 1) & mask;
    this.#table[2 * i] = address + 1;
    this.#table[2 * i + 1] = w0;
    this.#count++;
  }

  /** Room in the table for one more entry: doubles it when the budget allows. */
  #reserveSlot(): boolean {
    if (this.#count + 1 <= this.#capacity * MAX_LOAD) return true;
    const grown = this.#capacity * 2;
    if (this.bytes + this.otherBytes() + (grown - this.#capacity) * SLOT_BYTES > this.budgetBytes) {
      return false;
    }
    const old = this.#table;
    this.#table = new Uint32Array(2 * grown);
    this.#capacity = grown;
    this.#count = 0;
    for (let i = 0; i < old.length; i += 2) {
      const value = old[i] as number;
      if (value === 0) continue;
      const address = value - 1;
      const words = this.#words[address >>> this.#pageShift] as Uint32Array;
      const at = ((address & (this.pageBytes - 1)) + KEY) >>> 2;
      this.#place(
        words[at] as number,
        words[at + 1] as number,
        words[at + 2] as number,
        words[at + 3] as number,
        address,
      );
    }
    return true;
  }

  #canGrow(): boolean {
    return this.bytes + this.otherBytes() + this.pageBytes <= this.budgetBytes;
  }

  /** An address with `length` free bytes: at the head page, a new page, or a compacted one. */
  #allocate(length: number): number {
    if (this.#head < 0 || (this.#used[this.#head] as number) + length > this.pageBytes) {
      if (this.#canGrow()) this.#addPage();
      else if (!this.#compactForRoom(length)) return -1;
    }
    const head = this.#head;
    const at = this.#used[head] as number;
    this.#used[head] = at + length;
    return head * this.pageBytes + at;
  }

  #addPage(): void {
    const page = Buffer.allocUnsafeSlow(this.pageBytes);
    this.#pages.push(page);
    this.#words.push(new Uint32Array(page.buffer, page.byteOffset, this.pageBytes / 4));
    this.#used.push(0);
    this.#garbage.push(0);
    this.#head = this.#pages.length - 1;
  }

  /** Compacts the page with the most garbage if that frees `length` bytes; it becomes the head. */
  #compactForRoom(length: number): boolean {
    let best = -1;
    for (let p = 0; p < this.#pages.length; p++) {
      const free = this.pageBytes - (this.#used[p] as number) + (this.#garbage[p] as number);
      if (free >= length && (best < 0 || (this.#garbage[p] as number) > (this.#garbage[best] as number))) {
        best = p;
      }
    }
    if (best < 0) return false;
    this.#compact(best);
    this.#head = best;
    return true;
  }

  /** Slides the page's live records to its start, pointing their slots at the new places. */
  #compact(pageIndex: number): void {
    const page = this.#pages[pageIndex] as Buffer;
    const end = this.#used[pageIndex] as number;
    let write = 0;
    for (let read = 0; read < end; ) {
      const length = page.readUInt32LE(read + LENGTH);
      if (((page[read + FLAGS] as number) & FLAG_LIVE) !== 0) {
        if (write !== read) {
          page.copyWithin(write, read, read + length);
          this.#repoint(pageIndex * this.pageBytes + read, pageIndex * this.pageBytes + write);
        }
        write += length;
      }
      read += length;
    }
    this.#used[pageIndex] = write;
    this.#garbage[pageIndex] = 0;
  }

  /** The slot that pointed at `from` (its record now copied to `to`) points at `to`. */
  #repoint(from: number, to: number): void {
    const words = this.#words[to >>> this.#pageShift] as Uint32Array;
    const at = ((to & (this.pageBytes - 1)) + KEY) >>> 2;
    const w0 = words[at] as number;
    const mask = this.#capacity - 1;
    let i = hashOf(w0, words[at + 1] as number, words[at + 2] as number, words[at + 3] as number) & mask;
    while (this.#table[2 * i] !== from + 1) {
      if (this.#table[2 * i] === 0) throw new Error("subscription index: a live record without a slot");
      i = (i + 1) & mask;
    }
    this.#table[2 * i] = to + 1;
  }

  clear(): void {
    this.#pages.length = 0;
    this.#words.length = 0;
    this.#used.length = 0;
    this.#garbage.length = 0;
    this.#head = -1;
    this.#table = new Uint32Array(2 * INITIAL_SLOTS);
    this.#capacity = INITIAL_SLOTS;
    this.#count = 0;
  }
}
