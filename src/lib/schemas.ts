// Schema pieces shared by every feature: ids, timestamps, pagination and the problem+json body.
import { type TLiteral, type TSchema, type TSchemaOptions, type TUnion, Type } from "typebox";

export const Uuid = Type.String({
  format: "uuid",
  description: "UUID in lowercase canonical form (upper case and urn:uuid: are refused)",
});
export const Timestamp = Type.String({
  format: "date-time",
  description: "ISO 8601 UTC, e.g. 2026-11-21T10:00:00.000Z",
});

export const IdParams = Type.Object({ id: Uuid }, { additionalProperties: false });

export const PageQuery = Type.Object(
  {
    page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
    per_page: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
  },
  { additionalProperties: false },
);

export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    total: Type.Integer(),
    page: Type.Integer(),
    per_page: Type.Integer(),
  });
}

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: "stable snake_case error code" }),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: "Problem", description: "RFC 9457 problem details" },
);

const problemRef = Type.Unsafe<unknown>({ $ref: "Problem#", description: "problem+json" });

/** Error responses every authenticated route can give; routes add their own codes. */
export function problems(...statuses: number[]): Record<number, typeof problemRef> {
  const out: Record<number, typeof problemRef> = {};
  for (const status of [400, 401, ...statuses]) out[status] = problemRef;
  return out;
}

/**
 * A union of string literals from a value list defined elsewhere (src/domain/), so the words are
 * written once: the OpenAPI document still shows each as a `const` of an `anyOf`.
 */
export function Literals<const T extends readonly string[]>(
  values: T,
  options?: TSchemaOptions,
): TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }> {
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as unknown as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>;
}
