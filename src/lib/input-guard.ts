// One check of every request's body, query and path parameters before schema validation, so no
// route can forget it: NUL characters (PostgreSQL refuses them in text, SQLite's LIKE stops at them)
// and lone surrogates (not encodable as UTF-8) are refused, and nesting deeper than MAX_DEPTH is
// refused before a recursive validator or template walker meets it. Iterative: a body nested a
// million levels deep costs a loop, not the stack.
import { type ErrorDetail, UnprocessableError, ValidationError } from "./errors.ts";

/** Deepest nesting of objects and arrays accepted anywhere in a request (documented in docs/API.md). */
export const MAX_DEPTH = 64;

type Frame = { value: unknown; path: string; depth: number };

/** Throws a ValidationError (400) naming every bad string, or UnprocessableError (422) for depth. */
export function guardInput(parts: Record<string, unknown>): void {
  const problems: ErrorDetail[] = [];
  const stack: Frame[] = [];
  for (const [name, value] of Object.entries(parts)) stack.push({ value, path: name, depth: 0 });
  while (stack.length > 0 && problems.length < 20) {
    const { value, path, depth } = stack.pop() as Frame;
    if (typeof value === "string") {
      const problem = stringProblem(value);
      if (problem !== undefined) problems.push({ path, message: problem });
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    if (depth >= MAX_DEPTH) {
      throw new UnprocessableError(
        `${path} is nested deeper than ${MAX_DEPTH} levels`,
        [{ path, message: `nesting deeper than ${MAX_DEPTH} levels` }],
        "nesting_too_deep",
      );
    }
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        stack.push({ value: item, path: `${path}.${index}`, depth: depth + 1 });
      });
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = stringProblem(key);
      const safeKey = keyProblem === undefined ? key : JSON.stringify(key).slice(1, -1);
      if (keyProblem !== undefined)
        problems.push({ path: `${path}.${safeKey}`, message: `key ${keyProblem}` });
      stack.push({ value: item, path: `${path}.${safeKey}`, depth: depth + 1 });
    }
  }
  if (problems.length > 0) {
    throw new ValidationError(problems.map((p) => `${p.path} ${p.message}`).join("; "), problems);
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain NUL characters";
  if (LONE_SURROGATE.test(text)) return "must be valid Unicode (no unpaired surrogates)";
  return undefined;
}
