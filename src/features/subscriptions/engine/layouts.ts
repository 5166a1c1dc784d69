// Layouts: the lists of inbounds users have grants on, in grant order, shared by every user with the
// same list and numbered by slot (what a user's record points to). A layout holds the inbounds' refs
// and what the feature compiles from them (`C`: the templates its bodies are rendered from, made by
// the `compile` function the index is given; the engine only counts its bytes). An inbound change
// makes every layout with that inbound stale (its users' records miss) until the inbound is read
// again; then the layout is revived in place with the new parameters and its records are current
// again without being read: a record holds credentials, which an inbound change does not touch
// (a change of grants is a change of the user, which drops their record). A layout no record points
// to any more is forgotten.

/** One inbound as the engine sees it; shared by every layout that has it while it is current. */
export type InboundRef<P> = {
  readonly id: string;
  /** null: inactive (or gone), so its grants give no link. */
  readonly params: P | null;
  /** Set when the inbound changed after this was read: it must be read again. */
  isStale: boolean;
};

/** What the feature makes of a layout's refs (compiled templates): the engine needs its size only. */
export type Compiled = { readonly bytes: number };
export type Compile<P, C extends Compiled> = (refs: readonly InboundRef<P>[]) => C;

/** Bytes a layout costs besides what is compiled: the object, its key and refs. */
const LAYOUT_BYTES = 200;

export class Layout<P, C extends Compiled> {
  #refs: readonly InboundRef<P>[];
  #compiled: C;
  isStale = false;
  /** Records pointing to this layout. */
  users = 0;

  constructor(
    /** 0 for a layout used once and not registered (a render that is not stored). */
    readonly slot: number,
    readonly key: string,
    refs: readonly InboundRef<P>[],
    private readonly compile: Compile<P, C>,
  ) {
    this.#refs = refs;
    this.#compiled = compile(refs);
  }

  get refs(): readonly InboundRef<P>[] {
    return this.#refs;
  }

  /** What the feature compiled from the refs (made again when the layout is revived). */
  get templates(): C {
    return this.#compiled;
  }

  get bytes(): number {
    return LAYOUT_BYTES + this.key.length + this.#compiled.bytes;
  }

  revive(refs: readonly InboundRef<P>[]): void {
    this.#refs = refs;
    this.#compiled = this.compile(refs);
    this.isStale = false;
  }
}

function sameRefs<P>(a: readonly InboundRef<P>[], b: readonly InboundRef<P>[]): boolean {
  return a.length === b.length && a.every((ref, i) => ref === b[i]);
}

export function layoutKey(refs: readonly { id: string }[]): string {
  return refs.map((ref) => ref.id).join(",");
}

export class Layouts<P, C extends Compiled> {
  readonly #bySlot: (Layout<P, C> | undefined)[] = [undefined];
  readonly #byKey = new Map<string, Layout<P, C>>();
  readonly #freeSlots: number[] = [];
  /** Current inbound refs by id (stale ones are removed). */
  readonly #inbounds = new Map<string, InboundRef<P>>();
  #bytes = 0;
  /** The layout layoutFor() gave last. */
  #last: Layout<P, C> | undefined;

  constructor(
    /** The most bytes layouts may take; past it, new layouts are not kept. */
    private readonly budgetBytes: number,
    readonly compile: Compile<P, C>,
  ) {}

  get count(): number {
    return this.#byKey.size;
  }

  get staleCount(): number {
    let stale = 0;
    for (const layout of this.#byKey.values()) if (layout.isStale) stale++;
    return stale;
  }

  /** About what the layouts and their templates take. */
  get bytes(): number {
    return this.#bytes;
  }

  bySlot(slot: number): Layout<P, C> | undefined {
    return this.#bySlot[slot];
  }

  inbound(id: string): InboundRef<P> | undefined {
    return this.#inbounds.get(id);
  }

  /** Shares refs read from the database: the current ref of an inbound wins, new ones become current. */
  adopt(refs: readonly InboundRef<P>[]): InboundRef<P>[] {
    return refs.map((ref) => {
      const shared = this.#inbounds.get(ref.id);
      if (shared !== undefined) return shared;
      this.#inbounds.set(ref.id, ref);
      return ref;
    });
  }

  /** The registered, current layout with exactly these refs, if there is one (nothing is made). */
  existing(refs: readonly InboundRef<P>[]): Layout<P, C> | undefined {
    const known = this.#byKey.get(layoutKey(refs));
    return known !== undefined && !known.isStale && known.refs.every((ref, i) => ref === refs[i])
      ? known
      : undefined;
  }

  /**
   * The registered layout of these (current) refs: found, revived when stale, or made while the
   * budget allows. undefined when it cannot be kept.
   */
  layoutFor(refs: readonly InboundRef<P>[]): Layout<P, C> | undefined {
    if (refs.some((ref) => ref.isStale)) return undefined;
    // Users read together mostly share a layout: no key string for them.
    const last = this.#last;
    if (
      last !== undefined &&
      !last.isStale &&
      this.#bySlot[last.slot] === last &&
      sameRefs(last.refs, refs)
    ) {
      return last;
    }
    const key = layoutKey(refs);
    const known = this.#byKey.get(key);
    if (known !== undefined) {
      if (known.isStale) {
        this.#bytes -= known.bytes;
        known.revive(refs);
        this.#bytes += known.bytes;
      }
      this.#last = known;
      return known;
    }
    const slot = this.#freeSlots.at(-1) ?? this.#bySlot.length;
    const layout = new Layout(slot, key, refs, this.compile);
    if (this.#bytes + layout.bytes > this.budgetBytes) return undefined;
    this.#freeSlots.pop();
    this.#bySlot[slot] = layout;
    this.#byKey.set(key, layout);
    this.#bytes += layout.bytes;
    this.#last = layout;
    return layout;
  }

  retain(layout: Layout<P, C>): void {
    layout.users++;
  }

  /** One record fewer on this layout; forgets it when none is left. */
  release(slot: number): void {
    const layout = this.#bySlot[slot];
    if (layout === undefined || --layout.users > 0) return;
    this.#bySlot[slot] = undefined;
    this.#byKey.delete(layout.key);
    this.#freeSlots.push(slot);
    this.#bytes -= layout.bytes;
  }

  /** The inbound changed: its ref and every layout with it are stale until it is read again. */
  dropInbound(inboundId: string): void {
    const ref = this.#inbounds.get(inboundId);
    if (ref === undefined) return;
    ref.isStale = true;
    this.#inbounds.delete(inboundId);
    for (const layout of this.#byKey.values()) if (layout.refs.includes(ref)) layout.isStale = true;
  }

  /** Stale layouts and the ids of their inbounds that must be read to revive them. */
  stale(): { layouts: Layout<P, C>[]; inboundIds: string[] } {
    const layouts = [...this.#byKey.values()].filter((layout) => layout.isStale);
    const ids = new Set<string>();
    for (const layout of layouts) for (const ref of layout.refs) if (ref.isStale) ids.add(ref.id);
    return { layouts, inboundIds: [...ids] };
  }

  clear(): void {
    for (const ref of this.#inbounds.values()) ref.isStale = true;
    this.#inbounds.clear();
    this.#byKey.clear();
    this.#bySlot.length = 1;
    this.#freeSlots.length = 0;
    this.#bytes = 0;
    this.#last = undefined;
  }
}
