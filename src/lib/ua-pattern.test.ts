// The linear-time User-Agent matcher agrees with JavaScript's RegExp (flag i) on every pattern of its
// language — checked on 3,000 random patterns × 40 inputs and on the default rules with real
// User-Agents — and refuses what needs backtracking, saying why.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_UA_RULES } from "../features/subscription-settings/default-rules.ts";
import { MAX_PROGRAM, PatternError, UA_MATCH_CHARS, UaPattern } from "./ua-pattern.ts";

/** A small deterministic PRNG (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomPattern(next: () => number, depth = 0): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const atoms = [
    "a",
    "b",
    "A",
    "-",
    "\\.",
    ".",
    "[ab]",
    "[^a]",
    "[a-c]",
    "\\d",
    "\\w",
    "\\s",
    "\\W",
    "1",
    " ",
  ];
  const parts: string[] = [];
  const length = 1 + Math.floor(next() * 4);
  for (let i = 0; i < length; i++) {
    let atom = depth < 2 && next() < 0.25 ? `(${randomPattern(next, depth + 1)})` : pick(atoms);
    if (depth < 2 && next() < 0.1)
      atom = `(?:${randomPattern(next, depth + 1)}|${randomPattern(next, depth + 1)})`;
    if (next() < 0.35) atom += pick(["*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?"]);
    parts.push(atom);
  }
  let body = parts.join("");
  if (next() < 0.2) body = `^${body}`;
  if (next() < 0.2) body = `${body}$`;
  if (next() < 0.1) body = `\\b${body}\\b`;
  return body;
}

function randomInput(next: () => number): string {
  const chars = "aAbBc-.1 _!";
  let out = "";
  const length = Math.floor(next() * 12);
  for (let i = 0; i < length; i++) out += chars[Math.floor(next() * chars.length)];
  return out;
}

describe("the User-Agent matcher", () => {
  test("agrees with RegExp (flag i) on 3,000 random patterns × 40 inputs", () => {
    const next = rng(45);
    let compared = 0;
    for (let p = 0; p < 3000; p++) {
      const source = randomPattern(next);
      const ours = UaPattern.compile(source);
      const theirs = new RegExp(source, "i");
      for (let i = 0; i < 40; i++) {
        const input = randomInput(next);
        assert.equal(ours.test(input), theirs.test(input), `/${source}/i on ${JSON.stringify(input)}`);
        compared++;
      }
    }
    assert.equal(compared, 120_000);
  });

  test("the default rules pick the same format as RegExp did, for real User-Agents", () => {
    const agents = [
      "clash-verge/v1.7.7",
      "ClashMetaForAndroid/2.11.1.Meta",
      "Clash.Meta",
      "mihomo/1.18.9",
      "Stash/2.7.1 Clash/1.11.0",
      "SFA/1.10.1 (1; sing-box 1.10.1)",
      "HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box",
      "v2rayN/6.39",
      "v2rayN/6.40",
      "v2rayN/7.0.1",
      "v2rayNG/1.8.28",
      "v2rayNG/1.8.29",
      "v2rayNG/1.9.0",
      "Happ/1.9.1",
      "Streisand",
      "ktor-client",
      "Shadowrocket/2070 CFNetwork/1496.0.7 Darwin/23.5.0",
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64)",
      "",
    ];
    for (const rule of DEFAULT_UA_RULES) {
      const ours = UaPattern.compile(rule.pattern);
      const theirs = new RegExp(rule.pattern, "i");
      for (const agent of agents)
        assert.equal(ours.test(agent), theirs.test(agent), `${rule.pattern} on ${agent}`);
    }
  });

  test("refuses backreferences, lookaround, huge repeats and broken syntax, saying why", () => {
    const refused: [string, RegExp][] = [
      ["(a)\\1", /backreferences/],
      ["(?<x>a)\\k<x>", /backreferences/],
      ["(?=a)b", /lookahead/],
      ["(?!a)b", /lookahead/],
      ["(?<=a)b", /lookahead/],
      ["(?<!a)b", /lookahead/],
      ["a{101}", /at most 100/],
      ["(a{100}){100}", /too large/],
      ["((((a{10}){10}){10}){10})", /too large/],
      ["a**", /nothing to repeat/],
      ["+a", /nothing to repeat/],
      ["^*", /anchor/],
      ["(ab", /unterminated group/],
      ["ab)", /unmatched/],
      ["[ab", /unterminated/],
      ["[z-a]", /out of order/],
      ["\\q", /unknown escape/],
    ];
    for (const [source, why] of refused) {
      assert.throws(
        () => UaPattern.compile(source),
        (e: unknown) => e instanceof PatternError && why.test(e.message),
        source,
      );
    }
  });

  test("catastrophic backtracking patterns compile and answer correctly; the work is bounded by size × input", () => {
    const cases: [string, string, boolean][] = [
      ["^(a+)+$", `${"a".repeat(30)}!`, false],
      ["^(a+)+$", "a".repeat(30), true],
      ["(a|a)*$", `${"a".repeat(30)}!`, true],
      ["^(a|a)*$", `${"a".repeat(30)}!`, false],
      ["(.*a){20}", "a".repeat(30), true],
      ["(.*a){20}z", "a".repeat(30), false],
      ["((a*)*)*b", "a".repeat(40), false],
      ["(x+x+)+y", "x".repeat(40), false],
      ["^(\\w+\\s?)*$", `${"word ".repeat(20)}!`, false],
    ];
    for (const [source, input, expected] of cases) {
      const pattern = UaPattern.compile(source);
      assert.ok(pattern.size <= MAX_PROGRAM);
      assert.equal(pattern.test(input), expected, `${source} on ${input}`);
    }
    // Beyond UA_MATCH_CHARS the input is not looked at: a match after it is not seen.
    const far = UaPattern.compile("needle");
    assert.equal(far.test(`${"x".repeat(UA_MATCH_CHARS)}needle`), false);
    assert.equal(far.test(`${"x".repeat(UA_MATCH_CHARS - 6)}needle`), true);
  });
});
