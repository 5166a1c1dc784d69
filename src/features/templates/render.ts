// Placeholder substitution for inbound templates: `{{ name }}` in string values. A string that is
// exactly one placeholder takes the value's JSON type (a number port, a list of serverNames);
// placeholders inside longer strings are stringified. Pure: no I/O, no randomness.
import type { Problem } from "../../cores/core-types.ts";
import { type JsonObject, type JsonValue, joinPath } from "../../lib/json.ts";

export const BUILTIN_PLACEHOLDERS = [
  "port",
  "tag",
  "domain",
  "reality_private_key",
  "reality_public_key",
  "reality_short_id",
  "ss2022_server_key",
] as const;
export type BuiltinName = (typeof BUILTIN_PLACEHOLDERS)[number];

/** Per-inbound values the provisioning layer supplies; only the ones the template uses are needed. */
export type Builtins = {
  port?: number;
  tag?: string;
  /** The inbound certificate's domain. */
  domain?: string;
  reality_private_key?: string;
  reality_public_key?: string;
  reality_short_id?: string;
  ss2022_server_key?: string;
};

export type TemplateVariable = {
  name: string;
  description: string;
  /** Also fixes the variable's JSON type; null leaves the type open. */
  default: JsonValue;
  required: boolean;
};

export type PlaceholderUse = { name: string; path: string; exact: boolean };

export type RenderResult = { ok: true; json: JsonObject } | { ok: false; problems: Problem[] };

export const VARIABLE_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const PLACEHOLDER = /\{\{\s*([^{}\s]*)\s*\}\}/g;
const EXACT = /^\{\{\s*([^{}\s]*)\s*\}\}$/;

export function isBuiltin(name: string): name is BuiltinName {
  return (BUILTIN_PLACEHOLDERS as readonly string[]).includes(name);
}

/** Every placeholder in string values, with the JSON path of the string that holds it. */
export function placeholderUses(config: JsonValue, path = ""): PlaceholderUse[] {
  if (typeof config === "string") {
    const exact = EXACT.exec(config);
    if (exact) return [{ name: exact[1] ?? "", path, exact: true }];
    return [...config.matchAll(PLACEHOLDER)].map((match) => ({ name: match[1] ?? "", path, exact: false }));
  }
  if (Array.isArray(config))
    return config.flatMap((item, index) => placeholderUses(item, joinPath(path, index)));
  if (config !== null && typeof config === "object") {
    return Object.entries(config).flatMap(([key, value]) => placeholderUses(value, joinPath(path, key)));
  }
  return [];
}

/** The distinct placeholder names a config uses, in order of first use. */
export function placeholdersOf(config: JsonValue): string[] {
  return [...new Set(placeholderUses(config).map((use) => use.name))];
}

export function jsonTypeOf(value: JsonValue): "string" | "number" | "boolean" | "array" | "object" | "null" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value as "string" | "number" | "boolean" | "object";
}

/**
 * Substitutes variables and built-ins into `config`. Reports unknown placeholders, values for
 * undeclared variables, required variables without a value or default, values whose JSON type
 * differs from the default's, and built-ins the template uses but the caller did not supply.
 */
export function renderTemplate(
  config: JsonObject,
  variables: readonly TemplateVariable[],
  values: Readonly<Record<string, JsonValue>>,
  builtins: Builtins,
): RenderResult {
  const problems: Problem[] = [];
  const resolved = resolveValues(variables, values, problems);
  const used = placeholderUses(config);
  for (const use of used) {
    if (resolved.has(use.name)) continue;
    if (!isBuiltin(use.name)) {
      problems.push({ path: use.path, message: `unknown placeholder {{${use.name}}}` });
    } else if (builtins[use.name] === undefined) {
      problems.push({ path: use.path, message: `built-in {{${use.name}}} has no value for this inbound` });
    }
  }
  for (const name of BUILTIN_PLACEHOLDERS) {
    const value = builtins[name];
    if (value !== undefined) resolved.set(name, value);
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, json: substitute(config, resolved) as JsonObject };
}

function resolveValues(
  variables: readonly TemplateVariable[],
  values: Readonly<Record<string, JsonValue>>,
  problems: Problem[],
): Map<string, JsonValue> {
  const resolved = new Map<string, JsonValue>();
  const declared = new Set(variables.map((variable) => variable.name));
  for (const name of Object.keys(values)) {
    if (!declared.has(name))
      problems.push({ path: `values.${name}`, message: "is not a variable of this template" });
  }
  for (const variable of variables) {
    const path = `values.${variable.name}`;
    const given = Object.hasOwn(values, variable.name) ? values[variable.name] : undefined;
    if (given === undefined) {
      if (variable.default === null && variable.required) problems.push({ path, message: "is required" });
      resolved.set(variable.name, variable.default);
      continue;
    }
    const expected = jsonTypeOf(variable.default);
    if (expected !== "null" && jsonTypeOf(given) !== expected) {
      problems.push({ path, message: `must be ${article(expected)} ${expected}, like the default` });
    }
    resolved.set(variable.name, given);
  }
  return resolved;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? "an" : "a";
}

function substitute(value: JsonValue, resolved: ReadonlyMap<string, JsonValue>): JsonValue {
  if (typeof value === "string") {
    const exact = EXACT.exec(value);
    if (exact) return structuredClone(resolved.get(exact[1] ?? "") ?? null);
    return value.replace(PLACEHOLDER, (_match, name: string) => stringify(resolved.get(name) ?? null));
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, resolved));
  if (value !== null && typeof value === "object") {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = substitute(item, resolved);
    return out;
  }
  return value;
}

function stringify(value: JsonValue): string {
  if (value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}
