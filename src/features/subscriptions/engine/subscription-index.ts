// Every user's subscription as compact values in memory, within a byte budget: a record per user
// (user-record.ts, kept by record-store.ts) pointing to a shared layout (layouts.ts), from which the
// feature renders the answer on each request (its answer.ts; `P` are an inbound's link parameters,
// `C` what the feature compiles from a layout's refs). Told what changed by the change feed: a user-scoped
// change drops the user's record, an inbound-scoped one makes the layouts with that inbound stale until
// it is read again. A generation counter, bumped by every invalidation, keeps anything read from the
// database before a change from being stored after it.
import { type Compile, type Compiled, type InboundRef, Layout, Layouts, layoutKey } from "./layouts.ts";
import { RecordStore } from "./record-store.ts";
import {
  DOWNLOAD,
  FLAG_NOT_BY_ID,
  FLAGS,
  LAYOUT,
  LOADED_AT,
  type PreparedRecord,
  parseToken,
  prepareRecord,
  type RecordInput,
  UPLOAD,
  writeRecord,
} from "./user-record.ts";

export type IndexStats = {
  /** Users whose record is in memory. */
  entries: number;
  /** Pages, hash table and layouts: what the budget bounds. */
  bytes: number;
  budgetBytes: number;
  /** Requests answered from memory (a miss is counted where the database is read: the service). */
  hits: number;
  layouts: number;
  staleLayouts: number;
  /** Records that were rendered but not kept: the budget was full. */
  notStored: number;
};

const tokenProbe = new Uint8Array(16);

/** find()'s answer for a user whose subscription was revoked: known, and not answered by id. */
export const NOT_BY_ID = -2;

/** Layouts (with their compiled templates) get up to this share of the budget. */
const LAYOUT_SHARE = 8;

export class SubscriptionIndex<P, C extends Compiled> {
  readonly #layouts: Layouts<P, C>;
  readonly #records: RecordStore;
  #generation = 0;
  #hits = 0;
  #notStored = 0;

  /** budgetBytes 0: nothing is kept, every request reads the database. */
  constructor(
    readonly budgetBytes: number,
    compile: Compile<P, C>,
  ) {
    this.#layouts = new Layouts(Math.floor(budgetBytes / LAYOUT_SHARE), compile);
    this.#records = new RecordStore(budgetBytes, () => this.#layouts.bytes);
  }

  /** Changes whenever anything is invalidated: what was read before is stored only if it did not. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The address of a current record for the lowercase uuid at text[from, from + 36), or -1: absent,
   * its layout stale, or its traffic totals read before `notBeforeS` (whole seconds); or
   * NOT_BY_ID: the user's subscription was revoked, their id answers nothing (404 without a read).
   */
  find(text: string, from: number, notBeforeS: number): number {
    const address = this.#current(text, from, notBeforeS);
    if (address < 0) return address;
    const page = this.#records.page(address);
    if (((page[this.#records.offset(address) + FLAGS] as number) & FLAG_NOT_BY_ID) !== 0) return NOT_BY_ID;
    this.#hits++;
    return address;
  }

  /** As find(), for the user whose sub_token is the 32 hex characters at text[from, from + 32). */
  findToken(text: string, from: number, notBeforeS: number): number {
    if (!parseToken(text, from, tokenProbe, 0)) return -1;
    // The record store's token table is keyed by the token the record holds: a rotation, which
    // stores the record again, leaves nothing behind that reaches it by the old token.
    const address = this.#records.findToken(tokenProbe);
    if (address < 0) return -1;
    const current = this.#isCurrent(address, notBeforeS);
    if (current) this.#hits++;
    return current ? address : -1;
  }

  /**
   * For a database outage: the record of the lowercase uuid (isId) or sub token in `key`, however old
   * its totals and even if its layout went stale (an inbound changed and was not read again), as
   * long as the layout is still known; -1 when there is none, NOT_BY_ID as find() says it.
   */
  findAnyAge(key: string, isId: boolean): number {
    let address: number;
    if (isId) address = this.#records.findText(key, 0);
    else address = parseToken(key, 0, tokenProbe, 0) ? this.#records.findToken(tokenProbe) : -1;
    if (address < 0) return -1;
    const page = this.#records.page(address);
    const at = this.#records.offset(address);
    if (this.#layouts.bySlot(page.readUInt32LE(at + LAYOUT)) === undefined) return -1;
    if (isId && ((page[at + FLAGS] as number) & FLAG_NOT_BY_ID) !== 0) return NOT_BY_ID;
    return address;
  }

  #current(text: string, from: number, notBeforeS: number): number {
    const address = this.#records.findText(text, from);
    if (address < 0) return -1;
    return this.#isCurrent(address, notBeforeS) ? address : -1;
  }

  #isCurrent(address: number, notBeforeS: number): boolean {
    const page = this.#records.page(address);
    const at = this.#records.offset(address);
    const layout = this.#layouts.bySlot(page.readUInt32LE(at + LAYOUT));
    return !(layout === undefined || layout.isStale || page.readUInt32LE(at + LOADED_AT) < notBeforeS);
  }

  page(address: number): Buffer {
    return this.#records.page(address);
  }

  offset(address: number): number {
    return this.#records.offset(address);
  }

  layoutAt(address: number): Layout<P, C> {
    const page = this.#records.page(address);
    return this.#layouts.bySlot(page.readUInt32LE(this.#records.offset(address) + LAYOUT)) as Layout<P, C>;
  }

  /** Whether the user has a current record (whatever its age). */
  has(userId: string): boolean {
    return this.#current(userId, 0, 0) >= 0;
  }

  /** The current ref of an inbound, if one is known. */
  inbound(id: string): InboundRef<P> | undefined {
    return this.#layouts.inbound(id);
  }

  /**
   * Refs read from the database, swapped for the shared ones where those exist. Nothing is shared
   * when something was invalidated since `generation`: the refs are used once, marked stale.
   */
  adoptInbounds(refs: readonly InboundRef<P>[], generation: number): InboundRef<P>[] {
    if (generation !== this.#generation) return refs.map((ref) => ({ ...ref, isStale: true }));
    return this.#layouts.adopt(refs);
  }

  /**
   * Keeps the user's record (their refs in grant order) unless something was invalidated since
   * `generation`; its address, or -1 (then render it with `transient`).
   */
  store(input: Omit<RecordInput, "layoutSlot">, refs: readonly InboundRef<P>[], generation: number): number {
    if (this.budgetBytes === 0 || generation !== this.#generation) return -1;
    // The old record first: its layout may be this one, and go when its last record does.
    this.#remove(input.userId);
    const layout = this.#layouts.layoutFor(refs);
    const record = layout && prepareRecord({ ...input, layoutSlot: layout.slot });
    if (layout === undefined || record === undefined) return this.#refused(layout);
    this.#layouts.retain(layout);
    const address = this.#records.insert(record);
    if (address < 0) {
      this.#layouts.release(layout.slot);
      return this.#refused(undefined);
    }
    return address;
  }

  #refused(layout: Layout<P, C> | undefined): number {
    if (layout !== undefined && layout.users === 0) this.#layouts.release(layout.slot);
    this.#notStored++;
    return -1;
  }

  /**
   * A record that is not kept, and the layout to render it with: the registered one when it is
   * current with these very refs (compiling a template costs more than the render), else one made
   * for this render alone.
   */
  transient(input: Omit<RecordInput, "layoutSlot">, refs: readonly InboundRef<P>[]) {
    const record = prepareRecord({ ...input, layoutSlot: 0 }) as PreparedRecord;
    const page = Buffer.alloc(record.length);
    writeRecord(page, 0, record);
    const layout =
      this.#layouts.existing(refs) ?? new Layout(0, layoutKey(refs), refs, this.#layouts.compile);
    return { page, at: 0, layout };
  }

  /**
   * For a user's used_bytes read from the database at `readAtS` (whole seconds, when the read began):
   * "refreshed" when the record's upload + download already make it (the record then counts as loaded
   * at `readAtS`: the max age starts again), "changed" when they do not (read the split and call
   * refreshTotals()), "skipped" when there is no record loaded before that second.
   */
  refreshUsed(userId: string, usedBytes: number, readAtS: number): "refreshed" | "changed" | "skipped" {
    const address = this.#loadedBefore(userId, readAtS);
    if (address < 0) return "skipped";
    const page = this.#records.page(address);
    const at = this.#records.offset(address);
    if (page.readDoubleLE(at + UPLOAD) + page.readDoubleLE(at + DOWNLOAD) !== Math.max(usedBytes, 0))
      return "changed";
    page.writeUInt32LE(readAtS >>> 0, at + LOADED_AT);
    return "refreshed";
  }

  /**
   * Writes traffic totals read from the database at `readAtS` into the user's record in place, which
   * then counts as loaded at `readAtS`. The ETag leaves the totals out, so it stays. False when there
   * is no record loaded before that second.
   */
  refreshTotals(userId: string, uploadBytes: number, downloadBytes: number, readAtS: number): boolean {
    const address = this.#loadedBefore(userId, readAtS);
    if (address < 0) return false;
    const page = this.#records.page(address);
    const at = this.#records.offset(address);
    page.writeDoubleLE(uploadBytes, at + UPLOAD);
    page.writeDoubleLE(downloadBytes, at + DOWNLOAD);
    page.writeUInt32LE(readAtS >>> 0, at + LOADED_AT);
    return true;
  }

  /** The user's record if it was loaded before the second `readAtS` (one loaded since may hold later totals); else -1. */
  #loadedBefore(userId: string, readAtS: number): number {
    const address = this.#records.findText(userId, 0);
    if (address < 0) return -1;
    const loadedAtS = this.#records.page(address).readUInt32LE(this.#records.offset(address) + LOADED_AT);
    return loadedAtS < readAtS ? address : -1;
  }

  dropUser(userId: string): void {
    this.#generation++;
    this.#remove(userId);
  }

  #remove(userId: string): void {
    const address = this.#records.removeText(userId);
    if (address < 0) return;
    this.#layouts.release(this.#records.page(address).readUInt32LE(this.#records.offset(address) + LAYOUT));
  }

  /** Every record on a layout with this inbound misses until the inbound is read again. */
  dropInbound(inboundId: string): void {
    this.#generation++;
    this.#layouts.dropInbound(inboundId);
  }

  /** Inbounds to read so that the stale layouts can be revived (reviveLayouts). */
  staleInbounds(): string[] {
    return this.#layouts.stale().inboundIds;
  }

  /** Revives the stale layouts whose inbounds are all current now (after adoptInbounds). */
  reviveLayouts(): number {
    let revived = 0;
    for (const layout of this.#layouts.stale().layouts) {
      const refs = layout.refs.map((ref) => (ref.isStale ? this.#layouts.inbound(ref.id) : ref));
      if (refs.every((ref) => ref !== undefined) && this.#layouts.layoutFor(refs) === layout) revived++;
    }
    return revived;
  }

  clear(): void {
    this.#generation++;
    this.#layouts.clear();
    this.#records.clear();
  }

  /** Whether a record was refused for want of room (the warm-up stops there). */
  isFull(): boolean {
    return this.budgetBytes === 0 || this.#notStored > 0;
  }

  stats(): IndexStats {
    return {
      entries: this.#records.entries,
      bytes: this.#records.bytes + this.#layouts.bytes,
      budgetBytes: this.budgetBytes,
      hits: this.#hits,
      layouts: this.#layouts.count,
      staleLayouts: this.#layouts.staleCount,
      notStored: this.#notStored,
    };
  }
}
