// Two Ajv instances: request bodies are validated strictly (no type coercion, unknown fields are
// errors, not silently dropped); query strings and path params are coerced from their text form.
import { Ajv, type ErrorObject, type Options } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifySchema, FastifySchemaCompiler } from "fastify";
import type { ErrorDetail } from "./errors.ts";
import { isSafeLine, isSafeText, LINE_RULE, TEXT_RULE } from "./text.ts";

// ajv-formats is CommonJS; under ESM its function sits on `default`.
const addFormats = addFormatsModule as unknown as {
  default?: typeof addFormatsModule;
} & typeof addFormatsModule;
const applyFormats = (addFormats.default ?? addFormats) as unknown as (ajv: Ajv) => Ajv;

/** Lowercase 8-4-4-4-12 hex: the only form ids are stored, compared and answered in. */
export const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    ...options,
  });
  applyFormats(ajv);
  // ajv-formats' uuid also takes upper case and a `urn:uuid:` prefix; SQLite compares ids as text and
  // PostgreSQL parses them, so those forms answered differently. Only the form we store is accepted.
  ajv.addFormat("uuid", CANONICAL_UUID);
  // Names and texts that reach client documents and headers (lib/text.ts says why).
  ajv.addFormat("line", { type: "string", validate: isSafeLine });
  ajv.addFormat("text", { type: "string", validate: isSafeText });
  return ajv;
}

export function validatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const strict = makeAjv({ coerceTypes: false });
  const coercing = makeAjv({ coerceTypes: "array" });
  return ({ schema, httpPart }) => (httpPart === "body" ? strict : coercing).compile(schema as object);
}

/** Ajv errors → `{path, message}` naming the field, e.g. `body.telegram_id`, `params.id`. */
export function describeValidationErrors(errors: ErrorObject[], context: string): ErrorDetail[] {
  const byPath = new Map<string, string[]>();
  for (const { path, message } of errors.map((error) => describe(error, context))) {
    const messages = byPath.get(path) ?? [];
    if (!messages.includes(message) && message !== "must match a schema in anyOf") messages.push(message);
    byPath.set(path, messages);
  }
  return [...byPath].map(([path, messages]) => ({ path, message: messages.join(" or ") || "is invalid" }));
}

function describe(error: ErrorObject, context: string): ErrorDetail {
  {
    const base = [context, ...error.instancePath.split("/").filter(Boolean)].join(".");
    const params = error.params as Record<string, unknown>;
    if (error.keyword === "additionalProperties") {
      return { path: `${base}.${String(params.additionalProperty)}`, message: "unknown field" };
    }
    if (error.keyword === "required") {
      return { path: `${base}.${String(params.missingProperty)}`, message: "is required" };
    }
    if (error.keyword === "format" && params.format === "uuid") {
      return { path: base, message: "must be a UUID in lowercase canonical form (8-4-4-4-12 hex digits)" };
    }
    if (error.keyword === "format" && params.format === "line") return { path: base, message: LINE_RULE };
    if (error.keyword === "format" && params.format === "text") return { path: base, message: TEXT_RULE };
    return { path: base, message: error.message ?? "is invalid" };
  }
}
