// The share links of a list of grants, in order, with remarks made unique across the list. A grant
// whose link cannot be written so that clients read it back (InvalidLinkTargetError) gets none:
// one bad inbound must not take a user's whole subscription down. Each inbound's link shape is made
// once per link_params object and remark and kept while that object lives: the subscription index
// shares one object per inbound, so 100,000 users' links cost a concatenation each.

import type { UserValues } from "../../lib/user-values.ts";
import { uniqueRemarks } from "../../links/build.ts";
import { fillShape, type LinkShape } from "../../links/shape.ts";
import { InvalidLinkTargetError } from "../../links/uri.ts";
import { hostEntries, withRemarkValues } from "../inbounds/host-entries.ts";
import { type LinkParams, linkShapeOf, linkTargetOf } from "../inbounds/link-params.ts";

export type LinkSource = { link_params: LinkParams; credential: string };

type Shapes = { hasTarget: boolean; byRemark: Map<string, LinkShape | null> };
const shapesOf = new WeakMap<LinkParams, Shapes>();

export function linksOf(grants: readonly LinkSource[]): (string | undefined)[] {
  const shapes = linkShapesOf(grants.map((grant) => grant.link_params));
  return grants.map((grant, index) => {
    const shape = shapes[index] ?? null;
    return shape === null ? undefined : attempt(() => fillShape(shape, grant.credential));
  });
}

export type EntryLink = { remark: string; uri: string };

/**
 * The share links of a user's grants as /sub writes them: for each grant, one link per entry of its
 * inbound's hosts (the enabled ones, in position order; the one implicit host without hosts), per-user
 * remark variables filled from `values`, remarks unique across the whole list. A grant whose links
 * cannot be written gets an empty list.
 */
export function entryLinksOf(
  grants: readonly LinkSource[],
  values: UserValues | undefined,
  variant = 0,
): EntryLink[][] {
  const sources: LinkSource[] = [];
  const owner: number[] = [];
  grants.forEach((grant, index) => {
    for (const entry of hostEntries(grant.link_params, "links", variant)) {
      sources.push({ link_params: withRemarkValues(entry, values), credential: grant.credential });
      owner.push(index);
    }
  });
  const params = sources.map((source) => source.link_params);
  const shapes = params.map(shapesFor);
  const remarks = uniqueRemarks(params.map((p, i) => (shapes[i]?.hasTarget ? p.remark : "")));
  const out: EntryLink[][] = grants.map(() => []);
  sources.forEach((source, i) => {
    const remark = remarks[i] ?? "";
    const shape = shapeFor(source.link_params, shapes[i], remark);
    const uri = shape === null ? undefined : attempt(() => fillShape(shape, source.credential));
    if (uri !== undefined) out[owner[i] as number]?.push({ remark, uri });
  });
  return out;
}

/** The link shape of each inbound in the list, remarks made unique; null where no link can be made. */
export function linkShapesOf(params: readonly LinkParams[]): (LinkShape | null)[] {
  const shapes = params.map(shapesFor);
  const remarks = uniqueRemarks(params.map((p, i) => (shapes[i]?.hasTarget ? p.remark : "")));
  return params.map((p, index) => shapeFor(p, shapes[index], remarks[index] ?? ""));
}

function shapesFor(params: LinkParams): Shapes {
  let shapes = shapesOf.get(params);
  if (shapes === undefined) {
    // Whether any link can be made from these parameters does not depend on the credential.
    shapes = { hasTarget: attempt(() => linkTargetOf(params, "")) !== undefined, byRemark: new Map() };
    shapesOf.set(params, shapes);
  }
  return shapes;
}

function shapeFor(params: LinkParams, shapes: Shapes | undefined, remark: string): LinkShape | null {
  if (shapes === undefined || !shapes.hasTarget) return null;
  let shape = shapes.byRemark.get(remark);
  if (shape === undefined) {
    shape = attempt(() => linkShapeOf(params, remark)) ?? null;
    shapes.byRemark.set(remark, shape);
  }
  return shape;
}

function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch (error) {
    if (error instanceof InvalidLinkTargetError) return undefined;
    throw error;
  }
}
