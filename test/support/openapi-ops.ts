// The operations of the service's own OpenAPI document, and requests made from their schemas: a
// well-shaped sample of every body, and the bad variants an attacker sends (wrong types, missing
// and extra fields, huge strings and numbers, NUL, broken Unicode, deep nesting, prototype keys,
// other content types). The attack suite (test/attack/) walks every operation with them.

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  minItems?: number;
  default?: unknown;
  $ref?: string;
  additionalProperties?: boolean | JsonSchema;
};

export type Parameter = { name: string; in: "path" | "query"; schema: JsonSchema; required?: boolean };

export type Operation = {
  method: string;
  /** OpenAPI form: /api/users/{id} */
  path: string;
  isPublic: boolean;
  parameters: Parameter[];
  body: JsonSchema | undefined;
};

type OpenApiDoc = {
  security?: unknown[];
  paths: Record<string, Record<string, OpenApiOperation>>;
};
type OpenApiOperation = {
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
};

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const out: Operation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(byMethod)) {
      const security = op.security ?? doc.security ?? [];
      out.push({
        method: method.toUpperCase(),
        path,
        isPublic: security.length === 0,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
  return out;
}

/** The path with its {params} replaced from `values` (by name), URL-encoded. */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? ""));
}

const SAMPLE_UUID = "00000000-0000-4000-8000-000000000000";

/** Values for properties by name (real ids of fixtures), so samples get past the lookups. */
export type Known = Record<string, unknown>;

/** A value of the schema's shape: its required properties, from `known` where it names them. */
export function sample(schema: JsonSchema | undefined, known: Known = {}, depth = 0): unknown {
  if (schema === undefined || depth > 8) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum !== undefined) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants !== undefined) {
    const usable = variants.find((v) => v.type !== "null") ?? variants[0];
    return sample(usable, known, depth + 1);
  }
  switch (typeOf(schema)) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) {
        out[name] = name in known ? known[name] : sample(schema.properties?.[name], known, depth + 1);
      }
      return out;
    }
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, known, depth + 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return sampleString(schema);
  }
}

function sampleString(schema: JsonSchema): string {
  if (schema.format === "uuid") return SAMPLE_UUID;
  if (schema.format === "date-time") return "2026-11-21T10:00:00.000Z";
  if (schema.pattern !== undefined && /\^\[A-Za-z0-9\]/.test(schema.pattern)) return "probe1";
  return "probe".padEnd(schema.minLength ?? 1, "x");
}

function typeOf(schema: JsonSchema): string {
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== "null") ?? "null";
  if (schema.type !== undefined) return schema.type;
  if (schema.properties !== undefined) return "object";
  return "string";
}

export type BodyVariant = { name: string; contentType?: string; body: string | Buffer };

const MARK = "__portcullis_probe__";
const WRONG_VALUES: readonly unknown[] = [123, -1, 1.5, "text", true, null, [], {}, [1, "a"]];
const HUGE_NUMBERS: readonly string[] = [
  "1e308",
  "-1e308",
  "18446744073709551616",
  "-9223372036854775809",
  "-0",
];

/** Every bad body the suite sends to an operation that takes `schema`. */
export function badBodies(schema: JsonSchema, known: Known = {}): BodyVariant[] {
  const base = (sample(schema, known) ?? {}) as Record<string, unknown>;
  const json = (value: unknown) => JSON.stringify(value);
  const out: BodyVariant[] = [];
  const props = Object.entries(schema.properties ?? {});
  for (const name of schema.required ?? []) {
    const { [name]: _, ...rest } = base;
    out.push({ name: `missing ${name}`, body: json(rest) });
  }
  out.push({ name: "extra field", body: json({ ...base, unexpected_field: "x" }) });
  for (const [name] of props) {
    for (const wrong of WRONG_VALUES) {
      out.push({ name: `${name}=${json(wrong)}`, body: json({ ...base, [name]: wrong }) });
    }
    for (const number of HUGE_NUMBERS) {
      out.push({
        name: `${name}=${number}`,
        body: json({ ...base, [name]: MARK }).replace(`"${MARK}"`, number),
      });
    }
    out.push({ name: `${name} with NUL`, body: json({ ...base, [name]: "a\u0000b" }) });
    const [before = "", after = ""] = json({ ...base, [name]: MARK }).split(MARK);
    out.push({ name: `${name} lone surrogate`, body: `${before}\\ud800x${after}` });
    out.push({
      name: `${name} invalid UTF-8`,
      body: Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe, 0xc0, 0xaf]), Buffer.from(after)]),
    });
    out.push({ name: `${name} deep`, body: json({ ...base, [name]: nested(200) }) });
  }
  const firstString = props.find(([, s]) => typeOf(s) === "string")?.[0] ?? "name";
  out.push({
    name: `${firstString} of 1,000,000 characters`,
    body: json({ ...base, [firstString]: "a".repeat(1_000_000) }),
  });
  out.push({ name: "over the body limit", body: json({ ...base, [firstString]: "a".repeat(1_100_000) }) });
  out.push({
    name: "__proto__ key",
    body: `{"__proto__":{"isAdmin":true},${json(base).slice(1)}`.replace(",}", "}"),
  });
  out.push({
    name: "constructor.prototype",
    body: json({ ...base, constructor: { prototype: { isAdmin: true } } }),
  });
  out.push({ name: "array nested 100,000 deep", body: `${"[".repeat(100_000)}${"]".repeat(100_000)}` });
  out.push({ name: "object nested 65 deep", body: json(nested(65)) });
  out.push({ name: "not JSON", body: "{not json" });
  out.push({ name: "empty body", body: "" });
  out.push({ name: "JSON array", body: "[]" });
  out.push({ name: "JSON string", body: '"x"' });
  for (const contentType of [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json; charset=latin1",
    "application/xml",
  ]) {
    out.push({ name: `as ${contentType}`, contentType, body: json(base) });
  }
  return out;
}

function nested(depth: number): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

/** Bad values for a query parameter (as raw, already-encoded text). */
export const BAD_QUERY_VALUES: readonly string[] = [
  "-1",
  "0",
  "1e999",
  "99999999999999999999",
  "abc",
  "%00",
  "a%00b",
  "%ff",
  "%",
  "%ud800",
  "x".repeat(5000),
  "%E2%80%AE",
  "true",
  "[]",
];

/** Bad values for a path parameter (raw, already-encoded text). */
export const BAD_PATH_VALUES: readonly string[] = [
  SAMPLE_UUID.toUpperCase(),
  `urn:uuid:${SAMPLE_UUID}`,
  `{${SAMPLE_UUID}}`,
  "%00",
  `${SAMPLE_UUID}%00`,
  "%ff",
  "%",
  "..",
  "%2e%2e",
  "x".repeat(300),
  "'%20OR%201=1--",
  "%F0%9F%92%A9",
  "-1",
];
