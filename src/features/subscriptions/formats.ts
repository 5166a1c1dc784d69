// Which format a /sub request gets: an explicit path (/sub/{key}/{format}) or ?format= wins; then a
// browser (an HTML Accept and a browser User-Agent) gets the page; then the operator's ordered
// User-Agent rules (pattern → format, matched in linear time by lib/ua-pattern.ts; defaults from
// what the peers ship); anything else gets base64.
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

import { PatternError, UaPattern } from "../../lib/ua-pattern.ts";
import type { UaRule } from "../subscription-settings/default-rules.ts";

export type CompiledRules = {
  rules: readonly { pattern: UaPattern; format: Format }[];
  /** Stored rules the linear-time language refuses (saved before it existed): they never match. */
  skipped: readonly { index: number; pattern: string; reason: string }[];
};

/** The rules as linear-time matchers (lib/ua-pattern.ts); a rule that does not compile is skipped. */
export function compileRules(rules: readonly UaRule[]): CompiledRules {
  const compiled: CompiledRules["rules"][number][] = [];
  const skipped: CompiledRules["skipped"][number][] = [];
  rules.forEach((rule, index) => {
    try {
      compiled.push({ pattern: UaPattern.compile(rule.pattern), format: rule.format });
    } catch (error) {
      if (!(error instanceof PatternError)) throw error;
      skipped.push({ index, pattern: rule.pattern, reason: error.message });
    }
  });
  return { rules: compiled, skipped };
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
      if (rule.pattern.test(userAgent)) {
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
