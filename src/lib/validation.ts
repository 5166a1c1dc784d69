// Request validation and response serialization for Fastify. Two Ajv instances: request bodies are validated strictly (no type coercion, unknown fields are
// errors, not silently dropped); query strings and path params are coerced from their text form.
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import fastJsonStringify, { type Schema as FjsSchema } from "fast-json-stringify";
import type { FastifySchema, FastifySchemaCompiler } from "fastify";
import { type ErrorDetail, ValidationError } from "./errors.ts";
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

// One pair of Ajv instances per process and each distinct schema compiled once: compiling is most
// of an app's start (every route's body, query and params), and a process that builds several apps
// (the test suite) would otherwise compile the same schemas again for each. The key is the schema's
// JSON: routes get copies of shared schemas (app.ts' onRoute spreads them), equal JSON compiles to the
// same validator, and a validator holds no state between calls (`errors` is read right after one).
let ajvs: { strict: Ajv; coercing: Ajv } | undefined;
const compiled = new Map<string, ValidateFunction>();

function compiledFor(isBody: boolean, schema: object): ValidateFunction {
  ajvs ??= { strict: makeAjv({ coerceTypes: false }), coercing: makeAjv({ coerceTypes: "array" }) };
  const key = `${isBody ? "body" : "coerced"} ${JSON.stringify(schema)}`;
  let validate = compiled.get(key);
  if (validate === undefined) {
    validate = (isBody ? ajvs.strict : ajvs.coercing).compile(schema);
    compiled.set(key, validate);
  }
  return validate;
}

export function validatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  return ({ schema, httpPart }) => compiledFor(httpPart === "body", schema as object);
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

type Serialize = (data: unknown) => string;
const serializers = new Map<string, Map<string, Serialize>>();

/**
 * Fastify's response serializer factory (`schemaController.compilersFactory.buildSerializer`): what
 * Fastify does by default (fast-json-stringify with the app's shared schemas), with each distinct
 * response schema compiled once per process, for the same reason as the validators above.
 */
export function buildSerializer(
  externalSchemas: unknown,
  serializerOpts: unknown,
): (route: { schema?: unknown }) => Serialize {
  const external = (externalSchemas ?? {}) as Record<string, unknown>;
  const options = (serializerOpts ?? {}) as Record<string, unknown>;
  const setKey = JSON.stringify([external, options]);
  let cache = serializers.get(setKey);
  if (cache === undefined) {
    cache = new Map();
    serializers.set(setKey, cache);
  }
  const forSet = cache;
  return ({ schema }) => {
    const key = JSON.stringify(schema);
    let serialize = forSet.get(key);
    if (serialize === undefined) {
      // As Fastify's own compiler: a schema that is itself a shared one is not passed twice.
      const id = (schema as { $id?: unknown }).$id;
      const shared = typeof id === "string" && id in external ? omit(external, id) : external;
      serialize = fastJsonStringify(schema as FjsSchema, {
        ...options,
        schema: shared as Record<string, FjsSchema>,
      }) as Serialize;
      forSet.set(key, serialize);
    }
    return serialize;
  };
}

function omit(record: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...record };
  delete copy[key];
  return copy;
}

/**
 * Checks a value against a request-body schema as the API does (strict Ajv: no coercion, unknown
 * fields refused, defaults applied in place); a ValidationError naming each field otherwise. For
 * input that does not come through an HTTP route (the CLI).
 */
export function checkBody(schema: object, value: unknown, context = "body"): void {
  const validate = compiledFor(true, schema);
  if (!validate(value)) {
    throw new ValidationError("invalid input", describeValidationErrors(validate.errors ?? [], context));
  }
}
