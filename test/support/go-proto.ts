// Decodes protobuf bytes the way Go's protobuf (what Xray runs) does, so the stand-in core judges
// bytes like the real one: a field whose wire type does not match its declaration is kept as an
// unknown field (silently dropped from the message), malformed bytes are an error with Go's text.
// protobuf-es would instead misread such a field (e.g. a message where a bool is declared).

import {
  type DescField,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

/** Go's errDecode text, as the core reports it. */
export const GO_WIRE_FORMAT_ERROR = "proto: cannot parse invalid wire-format data";

export class GoDecodeError extends Error {
  constructor() {
    super(GO_WIRE_FORMAT_ERROR);
  }
}

export function goFromBinary<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  let filtered: Uint8Array;
  try {
    filtered = filter(schema, bytes);
    return fromBinary(schema, filtered);
  } catch {
    throw new GoDecodeError();
  }
}

/** The bytes without fields Go would set aside as unknown for a wire-type mismatch, recursively. */
function filter(schema: DescMessage, bytes: Uint8Array): Uint8Array {
  const reader = new BinaryReader(bytes);
  const writer = new BinaryWriter();
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    const start = reader.pos;
    reader.skip(wireType, no);
    const raw = bytes.subarray(start, reader.pos);
    const field = schema.fields.find((f) => f.number === no);
    if (field === undefined || !accepts(field, wireType)) continue;
    if (wireType === WireType.LengthDelimited && field.fieldKind === "message") {
      const inner = new BinaryReader(raw).bytes();
      writer.tag(no, wireType).bytes(filter(field.message, inner));
    } else if (
      wireType === WireType.LengthDelimited &&
      field.fieldKind === "list" &&
      field.listKind === "message"
    ) {
      const inner = new BinaryReader(raw).bytes();
      writer.tag(no, wireType).bytes(filter(field.message, inner));
    } else {
      writer.tag(no, wireType).raw(raw);
    }
  }
  return writer.finish();
}

function accepts(field: DescField, wireType: WireType): boolean {
  switch (field.fieldKind) {
    case "message":
    case "map":
      return wireType === WireType.LengthDelimited;
    case "enum":
      return wireType === WireType.Varint;
    case "scalar":
      return wireType === scalarWireType(field.scalar);
    case "list":
      if (field.listKind === "message") return wireType === WireType.LengthDelimited;
      if (field.listKind === "enum")
        return wireType === WireType.Varint || wireType === WireType.LengthDelimited;
      return (
        wireType === scalarWireType(field.scalar) ||
        (wireType === WireType.LengthDelimited && scalarWireType(field.scalar) !== WireType.LengthDelimited)
      );
  }
}

function scalarWireType(scalar: ScalarType): WireType {
  switch (scalar) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return WireType.LengthDelimited;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return WireType.Bit32;
    default:
      return WireType.Varint;
  }
}
