// Which format a /sub request gets: an explicit path (/sub/{key}/{format}) or ?format= wins; then a
// browser (an HTML Accept and a browser User-Agent) gets the page; then the operator's ordered
// User-Agent rules (regex → format; defaults from what the peers ship); anything else gets base64.
// A User-Agent's answer is remembered (clients send a handful of distinct strings) so the rules run
// once per string, not per request.
import type { Format } from "../../lib/subscription-formats.ts";

export const CONTENT_TYPES: Record<Format, string> = {
  base64: "text/plain; charset=utf-8",
  links: "text/plain; charset=utf-8",
  mihomo: "text/yaml; charset=utf-8",
  "sing-box": "application/json; charset=utf-8",
  "xray-json": "application/json; charset=utf-8",
};

import type { UaRule } from "../subscription-settings/default-rules.ts";

export type CompiledRules = { rules: readonly { regex: RegExp; format: Format }[] };

export function compileRules(rules: readonly UaRule[]): CompiledRules {
  return { rules: rules.map((rule) => ({ regex: new RegExp(rule.pattern, "i"), format: rule.format })) };
}

const BROWSER = /Mozilla\/|Chrome\/|Safari\/|Firefox\/|Opera|Edg\//;
const UA_MEMO_LIMIT = 1000;

/** The User-Agent → format choices of one set of rules, remembered up to a bound. */
export class FormatChooser {
  readonly #memo = new Map<string, Format>();
  constructor(private readonly compiled: CompiledRules) {}

  byUserAgent(userAgent: string | undefined): Format {
    if (userAgent === undefined || userAgent === "") return "base64";
    const known = this.#memo.get(userAgent);
    if (known !== undefined) return known;
    let format: Format = "base64";
    for (const rule of this.compiled.rules) {
      if (rule.regex.test(userAgent)) {
        format = rule.format;
        break;
      }
    }
    if (this.#memo.size >= UA_MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(userAgent, format);
    return format;
  }
}

/** A person's browser: it asked for HTML and says it is a browser (client apps send neither). */
export function isBrowser(accept: string | undefined, userAgent: string | undefined): boolean {
  return accept?.includes("text/html") === true && userAgent !== undefined && BROWSER.test(userAgent);
}
