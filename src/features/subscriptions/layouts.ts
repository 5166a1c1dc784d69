// Layouts: the lists of inbounds users have grants on, in grant order, shared by every user with the
// same list and numbered by slot (what a user's record points to). A layout holds the inbounds' link
// parameters and, compiled on first use, the template its bodies are rendered from. An inbound change
// makes every layout with that inbound stale (its users' records miss) until the inbound is read
// again; then the layout is revived in place with the new parameters and its records are current
// again without being read: a record holds credentials, which an inbound change does not touch
// (a change of grants is a change of the user, which drops their record). A layout no record points
// to any more is forgotten.
import { hostVariants } from "../inbounds/host-entries.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { type DocumentBases, type DocumentFormat, DocumentTemplate } from "./document-template.ts";
import { LinksTemplate } from "./links-template.ts";

/** One inbound as subscriptions see it; shared by every layout that has it while it is current. */
export type InboundRef = {
  readonly id: string;
  /** null: inactive (or gone), so its grants give no link. */
  readonly params: LinkParams | null;
  /** Set when the inbound changed after this was read: it must be read again. */
  isStale: boolean;
};

/** Bytes a layout costs besides its template: the object, its key and refs. */
const LAYOUT_BYTES = 200;

export class Layout {
  #refs: readonly InboundRef[];
  #template: LinksTemplate;
  /**
   * How many variants the hosts' SNI and Host lists need (1 without lists): a fetch picks one and
   * gets the templates compiled for it (variant 0's links template at once, the rest on first use).
   */
  #variants = 1;
  #otherTemplates: (LinksTemplate | undefined)[] = [];
  /** Document formats by variant, compiled on first use for the base documents' version they were made with. */
  #documents = new Map<string, DocumentTemplate>();
  isStale = false;
  /** Records pointing to this layout. */
  users = 0;

  constructor(
    /** 0 for a layout used once and not registered (a render that is not stored). */
    readonly slot: number,
    readonly key: string,
    refs: readonly InboundRef[],
  ) {
    this.#refs = refs;
    this.#template = compile(refs);
    this.#variants = variantsOf(refs);
  }

  get variants(): number {
    return this.#variants;
  }

  /** The links template of one variant (0 ≤ variant < variants). */
  templateFor(variant: number): LinksTemplate {
    if (variant === 0) return this.#template;
    let template = this.#otherTemplates[variant];
    if (template === undefined) {
      template = compile(this.#refs, variant);
      this.#otherTemplates[variant] = template;
    }
    return template;
  }

  get refs(): readonly InboundRef[] {
    return this.#refs;
  }

  get template(): LinksTemplate {
    return this.#template;
  }

  get bytes(): number {
    return LAYOUT_BYTES + this.key.length + this.#template.bytes;
  }

  /**
   * The template of a document format (compiled now if there is none for these bases). Its bytes are
   * not counted in the layouts' budget: a few per layout, and layouts are few.
   */
  document(format: DocumentFormat, bases: DocumentBases, variant = 0): DocumentTemplate {
    const key = variant === 0 ? format : `${format}:${variant}`;
    const known = this.#documents.get(key);
    if (known !== undefined && known.bases.version === bases.version) return known;
    const template = new DocumentTemplate(
      format,
      this.#refs.map((ref) => ref.params),
      bases,
      variant,
    );
    this.#documents.set(key, template);
    return template;
  }

  revive(refs: readonly InboundRef[]): void {
    this.#refs = refs;
    this.#template = compile(refs);
    this.#variants = variantsOf(refs);
    this.#otherTemplates = [];
    this.#documents = new Map();
    this.isStale = false;
  }
}

function compile(refs: readonly InboundRef[], variant = 0): LinksTemplate {
  return new LinksTemplate(
    refs.map((ref) => ref.params),
    variant,
  );
}

function variantsOf(refs: readonly InboundRef[]): number {
  let variants = 1;
  for (const ref of refs) variants = Math.max(variants, hostVariants(ref.params));
  return variants;
}

function sameRefs(a: readonly InboundRef[], b: readonly InboundRef[]): boolean {
  return a.length === b.length && a.every((ref, i) => ref === b[i]);
}

export function layoutKey(refs: readonly { id: string }[]): string {
  return refs.map((ref) => ref.id).join(",");
}

export class Layouts {
  readonly #bySlot: (Layout | undefined)[] = [undefined];
  readonly #byKey = new Map<string, Layout>();
  readonly #freeSlots: number[] = [];
  /** Current inbound refs by id (stale ones are removed). */
  readonly #inbounds = new Map<string, InboundRef>();
  #bytes = 0;
  /** The layout layoutFor() gave last. */
  #last: Layout | undefined;

  constructor(
    /** The most bytes layouts may take; past it, new layouts are not kept. */
    private readonly budgetBytes: number,
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

  bySlot(slot: number): Layout | undefined {
    return this.#bySlot[slot];
  }

  inbound(id: string): InboundRef | undefined {
    return this.#inbounds.get(id);
  }

  /** Shares refs read from the database: the current ref of an inbound wins, new ones become current. */
  adopt(refs: readonly InboundRef[]): InboundRef[] {
    return refs.map((ref) => {
      const shared = this.#inbounds.get(ref.id);
      if (shared !== undefined) return shared;
      this.#inbounds.set(ref.id, ref);
      return ref;
    });
  }

  /** The registered, current layout with exactly these refs, if there is one (nothing is made). */
  existing(refs: readonly InboundRef[]): Layout | undefined {
    const known = this.#byKey.get(layoutKey(refs));
    return known !== undefined && !known.isStale && known.refs.every((ref, i) => ref === refs[i])
      ? known
      : undefined;
  }

  /**
   * The registered layout of these (current) refs: found, revived when stale, or made while the
   * budget allows. undefined when it cannot be kept.
   */
  layoutFor(refs: readonly InboundRef[]): Layout | undefined {
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
    const layout = new Layout(slot, key, refs);
    if (this.#bytes + layout.bytes > this.budgetBytes) return undefined;
    this.#freeSlots.pop();
    this.#bySlot[slot] = layout;
    this.#byKey.set(key, layout);
    this.#bytes += layout.bytes;
    this.#last = layout;
    return layout;
  }

  retain(layout: Layout): void {
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
  stale(): { layouts: Layout[]; inboundIds: string[] } {
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
