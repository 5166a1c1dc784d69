// What a layout of the subscription engine (engine/layouts.ts: a list of inbounds in grant order,
// shared by every user with that list) is rendered with: the links template of each host variant and
// the document templates, compiled from the inbounds' link parameters on first use. The engine makes
// one per layout through compileLayout() and counts its bytes; the answer (answer.ts) reads it.
import { hostVariants } from "../inbounds/host-entries.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { type DocumentBases, type DocumentFormat, DocumentTemplate } from "./document-template.ts";
import type { Layout as EngineLayout, InboundRef as EngineRef } from "./engine/layouts.ts";
import { SubscriptionIndex as EngineIndex } from "./engine/subscription-index.ts";
import { LinksTemplate } from "./links-template.ts";

/** One inbound as subscriptions see it; shared by every layout that has it while it is current. */
export type InboundRef = EngineRef<LinkParams>;
export type Layout = EngineLayout<LinkParams, LayoutTemplates>;
export type SubscriptionIndex = EngineIndex<LinkParams, LayoutTemplates>;

/** The engine's index of subscriptions, its layouts compiled into templates (budgetBytes 0: nothing kept). */
export function subscriptionIndex(budgetBytes: number): SubscriptionIndex {
  return new EngineIndex(budgetBytes, compileLayout);
}

export function compileLayout(refs: readonly InboundRef[]): LayoutTemplates {
  return new LayoutTemplates(refs.map((ref) => ref.params));
}

export class LayoutTemplates {
  readonly #params: readonly (LinkParams | null)[];
  readonly #template: LinksTemplate;
  /**
   * How many variants the hosts' SNI and Host lists need (1 without lists): a fetch picks one and
   * gets the templates compiled for it (variant 0's links template at once, the rest on first use).
   */
  readonly #variants: number;
  readonly #otherTemplates: (LinksTemplate | undefined)[] = [];
  /** Document formats by variant, compiled on first use for the base documents' version they were made with. */
  readonly #documents = new Map<string, DocumentTemplate>();

  constructor(params: readonly (LinkParams | null)[]) {
    this.#params = params;
    this.#template = new LinksTemplate(params, 0);
    let variants = 1;
    for (const p of params) variants = Math.max(variants, hostVariants(p));
    this.#variants = variants;
  }

  get variants(): number {
    return this.#variants;
  }

  /** The links template of one variant (0 ≤ variant < variants). */
  templateFor(variant: number): LinksTemplate {
    if (variant === 0) return this.#template;
    let template = this.#otherTemplates[variant];
    if (template === undefined) {
      template = new LinksTemplate(this.#params, variant);
      this.#otherTemplates[variant] = template;
    }
    return template;
  }

  get template(): LinksTemplate {
    return this.#template;
  }

  /** What the layout costs besides itself: variant 0's links template (the others are made on use). */
  get bytes(): number {
    return this.#template.bytes;
  }

  /**
   * The template of a document format (compiled now if there is none for these bases). Its bytes are
   * not counted in the layouts' budget: a few per layout, and layouts are few.
   */
  document(format: DocumentFormat, bases: DocumentBases, variant = 0): DocumentTemplate {
    const key = variant === 0 ? format : `${format}:${variant}`;
    const known = this.#documents.get(key);
    if (known !== undefined && known.bases.version === bases.version) return known;
    const template = new DocumentTemplate(format, this.#params, bases, variant);
    this.#documents.set(key, template);
    return template;
  }
}
