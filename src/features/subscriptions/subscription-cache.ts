// The finished GET /sub responses, kept per user within a byte budget, so the hot path is a map
// lookup and a few copies instead of a query and a render. A record (cache-record.ts, kept in
// cache-pages.ts) stores its body as differences from the reference body of its layout: the list of
// inbounds the user's grants are on, shared by every user with the same grants. An inbound-scoped
// change retires every layout with that inbound, which invalidates their records without walking
// them; a user-scoped change drops one index entry. A generation counter, bumped by every
// invalidation, keeps a render that read the database before a change from being stored after it.
import { EMPTY_SUBSCRIPTION_LINE } from "../../links/subscription.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { decodeBody, encodeBody } from "./body-delta.ts";
import { CachePages } from "./cache-pages.ts";
import {
  layoutSlotAt,
  type RecordFields,
  recordLength,
  renderedAtSOf,
  setVisited,
  viewAt,
  writeRecord,
} from "./cache-record.ts";

/** One inbound as subscriptions see it; shared by every layout and render that has a grant on it. */
export type InboundRef = {
  readonly id: string;
  /** null: inactive (or gone), so its grants give no link. */
  readonly params: LinkParams | null;
  /** The first link rendered for this inbound: what layouts build their reference body from. */
  reference: string | undefined;
  isStale: boolean;
};

/** A set of users' inbounds, in grant order, and the body made of the inbounds' reference links. */
type Layout = { slot: number; refs: readonly InboundRef[]; body: string; isStale: boolean };

/** What a render stores. */
export type SubscriptionEntry = {
  inbounds: readonly InboundRef[];
  body: string;
  etag: string;
  userinfo: string;
  title: string;
  disposition: string;
  renderedAtS: number;
};

/** What a hit reads: the headers, and where the body is (bodyOf, before anything else is stored). */
export type CachedSubscription = {
  readonly etag: string;
  readonly userinfo: string;
  readonly title: string;
  readonly disposition: string;
  readonly renderedAtS: number;
  readonly page: Buffer;
  readonly bodyStart: number;
  readonly bodyEnd: number;
  readonly reference: string;
};

export type CacheStats = {
  entries: number;
  /** Pages in use, the estimated index and the reference bodies: what the budget bounds. */
  bytes: number;
  budgetBytes: number;
  /** Reads that found a current entry (a miss is counted where the database is read: the service). */
  hits: number;
  evictions: number;
  layouts: number;
  /** Times the reference bodies filled their share of the budget and every record was dropped. */
  layoutResets: number;
};

const DEFAULT_PAGE_BYTES = 1 << 20;
const PAGES_AT_LEAST = 8;
/** Reference bodies get 1/16 of the budget (64 MiB: 4 MiB, some 2,500 distinct sets of 5 inbounds). */
const LAYOUT_SHARE = 16;

/** Decoding the encoded body gives the rendered one back (checked before anything is stored). */
function isExact(encoded: string, layout: Layout, body: string): boolean {
  const source = Buffer.from(encoded, "latin1");
  return decodeBody(source, 0, source.length, layout.body) === body;
}

export function bodyOf(entry: CachedSubscription): string {
  return decodeBody(entry.page, entry.bodyStart, entry.bodyEnd, entry.reference);
}

export class SubscriptionCache {
  readonly #pages: CachePages;
  readonly #inbounds = new Map<string, InboundRef>();
  /** Layouts by their inbounds' ids (joined) and by slot. */
  readonly #layouts = new Map<string, Layout>();
  readonly #layoutSlots = new Map<number, Layout>();
  #layoutBytes = 0;
  readonly #layoutBudget: number;
  #layoutResets = 0;
  #nextSlot = 1;
  #generation = 0;
  #hits = 0;

  /** budgetBytes 0 disables caching (every request renders). */
  constructor(
    readonly budgetBytes: number,
    pageBytes = DEFAULT_PAGE_BYTES,
  ) {
    // At least eight pages, so one sweep never empties much of the cache and the reference bodies
    // (a quarter of the budget at most) always leave room for pages.
    const pageSize = Math.min(pageBytes, Math.floor(budgetBytes / PAGES_AT_LEAST));
    this.#layoutBudget = Math.floor(budgetBytes / LAYOUT_SHARE);
    this.#pages = new CachePages(budgetBytes, pageSize, () => this.#layoutBytes, this.#layoutBudget);
  }

  /** Changes whenever anything is invalidated: a render stores its result only if it did not. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * undefined when absent, when one of its inbounds changed since it was rendered, or when it was
   * rendered before `notBeforeS` (whole seconds).
   */
  get(userId: string, notBeforeS = 0): CachedSubscription | undefined {
    const found = this.#pages.find(userId);
    const layout = found && this.#layoutSlots.get(layoutSlotAt(found.page, found.at));
    if (found === undefined || layout === undefined || renderedAtSOf(found.page, found.at) < notBeforeS) {
      if (found !== undefined && layout === undefined) this.#pages.delete(userId);
      return undefined;
    }
    setVisited(found.page, found.at, true);
    this.#hits++;
    const view = viewAt(found.page, found.at);
    return {
      etag: view.etag,
      userinfo: view.userinfo,
      title: view.title,
      disposition: view.disposition,
      renderedAtS: view.renderedAtS,
      page: found.page,
      bodyStart: view.bodyStart,
      bodyEnd: view.bodyEnd,
      reference: layout.body,
    };
  }

  /** Whether a record is stored for the user and its layout is current. */
  has(userId: string): boolean {
    const found = this.#pages.find(userId);
    return found !== undefined && this.#layoutSlots.has(layoutSlotAt(found.page, found.at));
  }

  /** Stores the entry unless something was invalidated since `generation` was read. */
  set(userId: string, entry: SubscriptionEntry, generation: number): boolean {
    if (generation !== this.#generation || entry.inbounds.some((ref) => ref.isStale)) return false;
    const layout = this.#layoutFor(entry.inbounds);
    const body = layout && encodeBody(entry.body, layout.body);
    if (layout === undefined || body === undefined || !isExact(body, layout, entry.body)) return false;
    const fields: RecordFields = { ...entry, userId, layoutSlot: layout.slot, body };
    const length = recordLength(fields);
    if (length === undefined || length > this.#pages.pageBytes) return false;
    return this.#pages.store(userId, length, (page, at) => writeRecord(page, at, fields, length));
  }

  /** Whether storing about `bytes` more would evict something. */
  isFull(bytes = 1024): boolean {
    return this.#pages.isFull(bytes);
  }

  /** The shared ref of a fresh inbound, if one is known. */
  inbound(id: string): InboundRef | undefined {
    return this.#inbounds.get(id);
  }

  /**
   * Refs read from the database, swapped for the shared ones where those exist (two renders may
   * load one inbound at once; layouts must hold the ref that invalidation retires). Nothing is
   * shared when something was invalidated since `generation`: the render is used once, not stored.
   */
  adoptInbounds(refs: readonly InboundRef[], generation: number): InboundRef[] {
    if (generation !== this.#generation) return refs.map((ref) => ({ ...ref, isStale: true }));
    return refs.map((ref) => {
      const shared = this.#inbounds.get(ref.id);
      if (shared !== undefined) return shared;
      this.#inbounds.set(ref.id, ref);
      return ref;
    });
  }

  dropUser(userId: string): void {
    this.#generation++;
    this.#pages.delete(userId);
  }

  /** Every record with a grant on the inbound is a miss the next time it is asked for. */
  dropInbound(inboundId: string): void {
    this.#generation++;
    const ref = this.#inbounds.get(inboundId);
    if (ref === undefined) return;
    ref.isStale = true;
    this.#inbounds.delete(inboundId);
    for (const [key, layout] of this.#layouts) if (layout.refs.includes(ref)) this.#retire(key, layout);
  }

  clear(): void {
    this.#generation++;
    for (const ref of this.#inbounds.values()) ref.isStale = true;
    for (const [key, layout] of this.#layouts) this.#retire(key, layout);
    this.#inbounds.clear();
    this.#pages.clear();
  }

  stats(): CacheStats {
    return {
      entries: this.#pages.entries,
      bytes: this.#pages.bytes,
      budgetBytes: this.budgetBytes,
      hits: this.#hits,
      evictions: this.#pages.evictions,
      layouts: this.#layouts.size,
      layoutResets: this.#layoutResets,
    };
  }

  /** The shared layout of these inbounds, made on first use while the budget has room for it. */
  #layoutFor(refs: readonly InboundRef[]): Layout | undefined {
    const key = refs.map((ref) => ref.id).join(",");
    const known = this.#layouts.get(key);
    if (known !== undefined) return known;
    const links = refs.flatMap((ref) =>
      ref.params === null || ref.reference === undefined ? [] : [ref.reference],
    );
    const text = links.length === 0 ? EMPTY_SUBSCRIPTION_LINE : links.join("\n");
    const body = Buffer.from(text, "utf8").toString("base64");
    const bytes = body.length + key.length;
    if (bytes > this.#layoutBudget) return undefined;
    // Layouts nobody uses any more (grants changed) are not tracked one by one: when their share of
    // the budget is full, every layout and record goes and the cache fills again from renders.
    if (this.#layoutBytes + bytes > this.#layoutBudget) this.#resetLayouts();
    const layout: Layout = { slot: this.#nextSlot++, refs, body, isStale: false };
    this.#layouts.set(key, layout);
    this.#layoutSlots.set(layout.slot, layout);
    this.#layoutBytes += bytes;
    return layout;
  }

  #resetLayouts(): void {
    this.#layoutResets++;
    for (const [key, layout] of this.#layouts) this.#retire(key, layout);
    this.#pages.clear();
  }

  #retire(key: string, layout: Layout): void {
    layout.isStale = true;
    this.#layouts.delete(key);
    this.#layoutSlots.delete(layout.slot);
    this.#layoutBytes -= layout.body.length + key.length;
  }
}
