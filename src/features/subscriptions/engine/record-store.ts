// Where the subscription index keeps its user records: fixed-size pages outside the JS heap, written
// like a log, and two open-addressing hash tables to where a record is: from the user's id (the
// uuid's 16 bytes) and from the user's sub token (16 bytes), both keys read from the record itself,
// so a slot is 8 bytes (the address and the key's first word) and a token costs no more than that.
// Neither is seen by V8's garbage collector: a million users add a few typed arrays to the heap, not
// a million keys. A record that is replaced or dropped becomes garbage in its page; when no
// page can be added within the budget, the page with the most garbage is compacted in place. Nothing
// is evicted: when even that does not make room, the record is not stored (the caller renders it once
// and says so in the statistics).
import {
  FLAG_LIVE,
  FLAGS,
  KEY,
  LENGTH,
  type PreparedRecord,
  parseUuid,
  TOKEN,
  writeRecord,
} from "./user-record.ts";

/**
 * 4 MiB: each page is a mapping of its own (malloc maps blocks over its threshold) that spans at least
 * one whole aligned 2 MiB range, and with glibc's `glibc.malloc.hugetlb=1` tunable (npm start, the
 * Dockerfile, the systemd unit) malloc asks for transparent huge pages on it: a request's random record
 * then rarely costs a 4 KiB TLB miss (docs/SUBSCRIPTIONS.md, Memory). A 1 MiB page holds no huge page.
 */
const DEFAULT_PAGE_BYTES = 1 << 22;
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

/** The record at an address as 32-bit words: the page's words and the record's first word in it. */
type WordsOf = (address: number) => { words: Uint32Array; at: number };

/**
 * Open addressing (linear probing, no tombstones) from a 16-byte key that every record in it holds
 * at `keyOffset` (4-aligned) to the record's address. Per slot, side by side so one probe touches
 * one cache line: the address + 1 (0: empty) at 2i, the key's first word at 2i + 1.
 */
class AddressTable {
  table = new Uint32Array(2 * INITIAL_SLOTS);
  capacity = INITIAL_SLOTS;
  count = 0;

  constructor(
    private readonly wordsOf: WordsOf,
    private readonly keyOffset: number,
  ) {}

  /** The address of the record holding the key in `keyWords`, or -1. */
  find(): number {
    const slot = this.slotOf();
    return slot < 0 ? -1 : (this.table[2 * slot] as number) - 1;
  }

  #keyIs(address: number, w1: number, w2: number, w3: number): boolean {
    const { words, at } = this.wordsOf(address);
    const k = at + (this.keyOffset >>> 2);
    return words[k + 1] === w1 && words[k + 2] === w2 && words[k + 3] === w3;
  }

  #homeOf(address: number): number {
    const { words, at } = this.wordsOf(address);
    const k = at + (this.keyOffset >>> 2);
    return hashOf(words[k] as number, words[k + 1] as number, words[k + 2] as number, words[k + 3] as number);
  }

  /** The slot of the entry for the key in `keyWords` (set by the caller), or -1. */
  slotOf(): number {
    const w0 = keyWords[0] as number;
    const w1 = keyWords[1] as number;
    const w2 = keyWords[2] as number;
    const w3 = keyWords[3] as number;
    const mask = this.capacity - 1;
    const table = this.table;
    for (let i = hashOf(w0, w1, w2, w3) & mask; ; i = (i + 1) & mask) {
      const value = table[2 * i] as number;
      if (value === 0) return -1;
      if (table[2 * i + 1] === w0 && this.#keyIs(value - 1, w1, w2, w3)) return i;
    }
  }

  /** The slot that points at `address` (the record there holds the key), or -1. */
  slotAt(address: number): number {
    const mask = this.capacity - 1;
    for (let i = this.#homeOf(address) & mask; ; i = (i + 1) & mask) {
      const value = this.table[2 * i] as number;
      if (value === 0) return -1;
      if (value === address + 1) return i;
    }
  }

  /** Adds an entry for the record at `address` (its key not in the table: the caller made sure). */
  place(address: number): void {
    const { words, at } = this.wordsOf(address);
    const w0 = words[at + (this.keyOffset >>> 2)] as number;
    const mask = this.capacity - 1;
    let i = this.#homeOf(address) & mask;
    while (this.table[2 * i] !== 0) i = (i + 1) & mask;
    this.table[2 * i] = address + 1;
    this.table[2 * i + 1] = w0;
    this.count++;
  }

  /** Empties the slot and moves later entries of its probe run back. */
  clearSlot(slot: number): void {
    const mask = this.capacity - 1;
    let hole = slot;
    const table = this.table;
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
    this.count--;
  }

  /** Whether one more entry fits without growing. */
  hasRoom(): boolean {
    return this.count + 1 <= this.capacity * MAX_LOAD;
  }

  /** Doubles the table (every entry placed again). */
  grow(): void {
    const old = this.table;
    this.capacity *= 2;
    this.table = new Uint32Array(2 * this.capacity);
    this.count = 0;
    for (let i = 0; i < old.length; i += 2) {
      const value = old[i] as number;
      if (value !== 0) this.place(value - 1);
    }
  }

  /** The entry pointing at `from` (its record now copied to `to`) points at `to`. */
  repoint(from: number, to: number): void {
    const mask = this.capacity - 1;
    let i = this.#homeOf(to) & mask;
    while (this.table[2 * i] !== from + 1) {
      if (this.table[2 * i] === 0) throw new Error("subscription index: a live record without a slot");
      i = (i + 1) & mask;
    }
    this.table[2 * i] = to + 1;
  }

  clear(): void {
    this.table = new Uint32Array(2 * INITIAL_SLOTS);
    this.capacity = INITIAL_SLOTS;
    this.count = 0;
  }
}

const NO_TOKEN = new Uint8Array(16);

/** Whether the record's sub token is set (16 bytes, not all zero). */
function hasToken(words: Uint32Array, at: number): boolean {
  const k = at + (TOKEN >>> 2);
  return (
    ((words[k] as number) |
      (words[k + 1] as number) |
      (words[k + 2] as number) |
      (words[k + 3] as number)) !==
    0
  );
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
  readonly #wordsOf: WordsOf = (address) => {
    this.#at.words = this.#words[address >>> this.#pageShift] as Uint32Array;
    this.#at.at = (address & (this.pageBytes - 1)) >>> 2;
    return this.#at;
  };
  readonly #at: { words: Uint32Array; at: number } = { words: new Uint32Array(0), at: 0 };
  /** By user id: every record. */
  readonly #ids = new AddressTable(this.#wordsOf, KEY);
  /** By sub token: the records that have one. */
  readonly #tokens = new AddressTable(this.#wordsOf, TOKEN);

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
    return this.#ids.count;
  }

  /** Records that have a sub token. */
  get tokens(): number {
    return this.#tokens.count;
  }

  /** Pages and tables: what this store takes of the budget. */
  get bytes(): number {
    return this.#pages.length * this.pageBytes + (this.#ids.capacity + this.#tokens.capacity) * SLOT_BYTES;
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
    return this.#ids.find();
  }

  /** Where the record of the user whose id is these 16 bytes is, or -1. */
  findBytes(key: Uint8Array): number {
    keyBytes.set(key);
    return this.#ids.find();
  }

  /** Where the record holding this sub token (16 bytes, not all zero) is, or -1. */
  findToken(token: Uint8Array): number {
    keyBytes.set(token);
    return this.#tokens.find();
  }

  /**
   * Stores the record of a user who has none (removeText first); its address, or -1 when it does not
   * fit. A token another record holds (there should be none: tokens are unique) stays with that one.
   */
  insert(record: PreparedRecord): number {
    if (record.length > this.pageBytes || !parseUuid(record.input.userId, 0, keyBytes, 0)) return -1;
    const token = record.token ?? NO_TOKEN;
    let withToken = false;
    if (token.some((byte) => byte !== 0)) {
      keyBytes.set(token);
      withToken = this.#tokens.slotOf() < 0;
    }
    if (!this.#reserveSlot(this.#ids) || (withToken && !this.#reserveSlot(this.#tokens))) return -1;
    const address = this.#allocate(record.length);
    if (address < 0) return -1;
    writeRecord(this.page(address), this.offset(address), record);
    this.#ids.place(address);
    if (withToken) this.#tokens.place(address);
    return address;
  }

  /** Drops the user's record; the address it had (readable until the next insert), or -1. */
  removeText(text: string): number {
    if (!parseUuid(text, 0, keyBytes, 0)) return -1;
    const slot = this.#ids.slotOf();
    if (slot < 0) return -1;
    const address = (this.#ids.table[2 * slot] as number) - 1;
    const page = this.page(address);
    const at = this.offset(address);
    page[at + FLAGS] = (page[at + FLAGS] as number) & ~FLAG_LIVE;
    const pageIndex = address >>> this.#pageShift;
    this.#garbage[pageIndex] = (this.#garbage[pageIndex] ?? 0) + page.readUInt32LE(at + LENGTH);
    this.#ids.clearSlot(slot);
    const { words, at: word } = this.#wordsOf(address);
    if (hasToken(words, word)) {
      const tokenSlot = this.#tokens.slotAt(address);
      if (tokenSlot >= 0) this.#tokens.clearSlot(tokenSlot);
    }
    return address;
  }

  /** Room in the table for one more entry: doubles it when the budget allows. */
  #reserveSlot(table: AddressTable): boolean {
    if (table.hasRoom()) return true;
    if (this.bytes + this.otherBytes() + table.capacity * SLOT_BYTES > this.budgetBytes) return false;
    table.grow();
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
          const from = pageIndex * this.pageBytes + read;
          const to = pageIndex * this.pageBytes + write;
          // The token slot is found from the record where it still is (its key words are read there).
          const { words, at } = this.#wordsOf(from);
          const tokenSlot = hasToken(words, at) ? this.#tokens.slotAt(from) : -1;
          page.copyWithin(write, read, read + length);
          this.#ids.repoint(from, to);
          if (tokenSlot >= 0) this.#tokens.table[2 * tokenSlot] = to + 1;
        }
        write += length;
      }
      read += length;
    }
    this.#used[pageIndex] = write;
    this.#garbage[pageIndex] = 0;
  }

  clear(): void {
    this.#pages.length = 0;
    this.#words.length = 0;
    this.#used.length = 0;
    this.#garbage.length = 0;
    this.#head = -1;
    this.#ids.clear();
    this.#tokens.clear();
  }
}
