// Range and type checks for scalar field values, shared by the JSON reader and the encoder, so an
// out-of-range or non-integer value is refused with the field's path instead of being mangled on the wire.
import { ScalarType } from "@bufbuild/protobuf";
import type { ScalarValue } from "@bufbuild/protobuf/reflect";
import { LobbyFormatError } from "./error.ts";

type IntRange = { readonly min: bigint; readonly max: bigint; readonly is64Bit: boolean };

const int32: IntRange = { min: -(2n ** 31n), max: 2n ** 31n - 1n, is64Bit: false };
const uint32: IntRange = { min: 0n, max: 2n ** 32n - 1n, is64Bit: false };
const int64: IntRange = { min: -(2n ** 63n), max: 2n ** 63n - 1n, is64Bit: true };
const uint64: IntRange = { min: 0n, max: 2n ** 64n - 1n, is64Bit: true };

const intRanges: ReadonlyMap<ScalarType, IntRange> = new Map([
  [ScalarType.INT32, int32],
  [ScalarType.SINT32, int32],
  [ScalarType.SFIXED32, int32],
  [ScalarType.UINT32, uint32],
  [ScalarType.FIXED32, uint32],
  [ScalarType.INT64, int64],
  [ScalarType.SINT64, int64],
  [ScalarType.SFIXED64, int64],
  [ScalarType.UINT64, uint64],
  [ScalarType.FIXED64, uint64],
]);

/** The proto spelling of a scalar type, e.g. `fixed64`, for error messages. */
export function scalarTypeName(type: ScalarType): string {
  return ScalarType[type].toLowerCase();
}

/** Integer range of a type, or undefined for string, bool, bytes and floating point. */
export function intRange(type: ScalarType): IntRange | undefined {
  return intRanges.get(type);
}

/**
 * Asserts that `value` is a valid in-memory value for `type` as protobuf-es represents it: a number for
 * 32-bit integers, a bigint for 64-bit ones, a well-formed string, a boolean.
 */
export function checkScalar(type: ScalarType, value: unknown, path: string): asserts value is ScalarValue {
  const range = intRanges.get(type);
  if (range !== undefined) {
    checkInteger(type, range, value, path);
    return;
  }
  if (type === ScalarType.STRING) {
    if (typeof value !== "string")
      throw new LobbyFormatError(path, `expected a string, got ${describe(value)}`);
    if (loneSurrogate.test(value)) {
      throw new LobbyFormatError(path, "string contains a lone UTF-16 surrogate, which UTF-8 cannot encode");
    }
    return;
  }
  if (type === ScalarType.BOOL) {
    if (typeof value !== "boolean")
      throw new LobbyFormatError(path, `expected a boolean, got ${describe(value)}`);
    return;
  }
  throw new LobbyFormatError(path, `scalar type ${scalarTypeName(type)} is not supported by the lobby codec`);
}

// With the `u` flag a surrogate class matches only unpaired surrogates; pairs are one code point.
const loneSurrogate = /[\uD800-\uDFFF]/u;

function checkInteger(type: ScalarType, range: IntRange, value: unknown, path: string): void {
  let big: bigint;
  if (range.is64Bit) {
    if (typeof value !== "bigint")
      throw new LobbyFormatError(path, `expected a bigint, got ${describe(value)}`);
    big = value;
  } else {
    if (typeof value !== "number")
      throw new LobbyFormatError(path, `expected a number, got ${describe(value)}`);
    if (!Number.isInteger(value)) throw new LobbyFormatError(path, `${value} is not an integer`);
    big = BigInt(value);
  }
  if (big < range.min || big > range.max) {
    throw new LobbyFormatError(
      path,
      `${big} is out of range for ${scalarTypeName(type)} (${range.min} to ${range.max})`,
    );
  }
}

/** A short description of a JSON or JS value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
    case "number":
    case "bigint":
    case "boolean":
      return `${typeof value} ${String(value)}`;
    default:
      return typeof value === "object" ? "an object" : typeof value;
  }
}
