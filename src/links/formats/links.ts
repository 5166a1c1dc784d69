// The `links` format: the share links as plain text, one per line (the base64 body without its
// encoding), for people and tools that read them directly.
import { buildLinks } from "../build.ts";
import { EMPTY_SUBSCRIPTION_LINE } from "../subscription.ts";
import { InvalidLinkTargetError } from "../uri.ts";
import { type LeftOut, placeholderTarget, type RenderedFormat, type SubscriptionEntry } from "./entries.ts";

export function renderPlainLinks(entries: readonly SubscriptionEntry[]): RenderedFormat {
  if (entries.length === 0) return { body: EMPTY_SUBSCRIPTION_LINE, leftOut: [] };
  const targets = entries.map((entry) =>
    entry.kind === "link" ? entry.target : placeholderTarget(entry.text),
  );
  const leftOut: LeftOut[] = [];
  const valid = targets.filter((target) => {
    try {
      buildLinks([target]);
      return true;
    } catch (error) {
      if (!(error instanceof InvalidLinkTargetError)) throw error;
      leftOut.push({ name: target.remark, reason: error.message });
      return false;
    }
  });
  return { body: buildLinks(valid).join("\n"), leftOut };
}
