// Binary encode/decode over protobuf-es, stricter than the library about input it did not write: a known
// field with the wrong wire type, invalid UTF-8 in a string and a field running past the end of its
// message are errors naming the field (protobuf-es would misread, replace with U+FFFD, or ignore them).
import {
  type DescField,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import { isReflectMessage, type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { joinPath } from "../lib/json.ts";
import { LobbyFormatError } from "./error.ts";
import { checkScalar, scalarTypeName } from "./scalars.ts";

/** Serialises a message after checking every set value; unknown fields are written back unchanged. */
export function encodeMessage<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): Uint8Array {
  checkValues(reflect(desc, message), "");
  return toBinary(desc, message);
}

/** Parses bytes into a message, keeping unknown fields; every failure is a LobbyFormatError. */
export function decodeMessage<Desc extends DescMessage>(desc: Desc, bytes: Uint8Array): MessageShape<Desc> {
  const at = { path: "" };
  try {
    checkWire(desc, new BinaryReader(bytes), bytes.length, "", at);
    at.path = "";
    return fromBinary(desc, bytes);
  } catch (error) {
    if (error instanceof LobbyFormatError) throw error;
    throw new LobbyFormatError(at.path, readerFailure(error));
  }
}

/** How many unknown fields the message and its nested messages carry (JSON has no place for them). */
export function countUnknownFields<Desc extends DescMessage>(
  desc: Desc,
  message: MessageShape<Desc>,
): number {
  return countUnknown(reflect(desc, message));
}

function countUnknown(msg: ReflectMessage): number {
  let count = msg.getUnknown()?.length ?? 0;
  for (const field of msg.fields) {
    if (field.fieldKind !== "list" || field.listKind !== "message") continue;
    for (const item of msg.get(field)) if (isReflectMessage(item)) count += countUnknown(item);
  }
  return count;
}

function checkValues(msg: ReflectMessage, path: string): void {
  for (const field of msg.fields) {
    if (!msg.isSet(field)) continue;
    const fieldPath = joinPath(path, field.name);
    if (field.fieldKind === "scalar") {
      checkScalar(field.scalar, msg.get(field), fieldPath);
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      let index = 0;
      for (const item of msg.get(field)) {
        if (isReflectMessage(item)) checkValues(item, `${fieldPath}[${index}]`);
        index++;
      }
    }
  }
}

/** Walks the wire records of one message (bytes reader.pos..end), recursing into nested messages. */
function checkWire(desc: DescMessage, reader: BinaryReader, end: number, path: string, at: { path: string }) {
  const seen = new Map<number, number>();
  while (reader.pos < end) {
    at.path = path;
    const [fieldNo, wireType] = reader.tag();
    const field = desc.fields.find((f) => f.number === fieldNo);
    if (field === undefined) {
      reader.skip(wireType, fieldNo);
      continue;
    }
    const index = seen.get(fieldNo) ?? 0;
    seen.set(fieldNo, index + 1);
    const fieldPath = joinPath(path, field.fieldKind === "list" ? `${field.name}[${index}]` : field.name);
    at.path = fieldPath;
    const expected = expectedWireType(field);
    if (expected !== undefined && wireType !== expected) {
      throw new LobbyFormatError(
        fieldPath,
        `wire type ${wireType} (${WireType[wireType]}) does not fit ${fieldTypeName(field)}, which uses wire type ${expected} (${WireType[expected]})`,
      );
    }
    const child = field.fieldKind === "message" || field.fieldKind === "list" ? field.message : undefined;
    if (child !== undefined && wireType === WireType.LengthDelimited) {
      const length = reader.uint32();
      if (reader.pos + length > end) throw new LobbyFormatError(fieldPath, truncated);
      checkWire(child, reader, reader.pos + length, fieldPath, at);
    } else if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) {
      checkUtf8(reader.bytes(), fieldPath);
    } else if (wireType === WireType.Varint) {
      reader.uint64(); // unlike skip(), refuses varints longer than 10 bytes
    } else {
      reader.skip(wireType, fieldNo);
    }
  }
  if (reader.pos !== end) {
    throw new LobbyFormatError(
      at.path,
      "field runs past the end of its enclosing message (length prefix too short)",
    );
  }
}

const truncated = "input is truncated";

function expectedWireType(field: DescField): WireType | undefined {
  if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
    return field.delimitedEncoding ? WireType.StartGroup : WireType.LengthDelimited;
  }
  if (field.fieldKind !== "scalar") return undefined;
  switch (field.scalar) {
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.DOUBLE:
      return WireType.Bit64;
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
      return WireType.Bit32;
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return WireType.LengthDelimited;
    default:
      return WireType.Varint;
  }
}

function fieldTypeName(field: DescField): string {
  return field.fieldKind === "scalar" ? scalarTypeName(field.scalar) : `message ${field.message?.name}`;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function checkUtf8(bytes: Uint8Array, path: string): void {
  try {
    strictUtf8.decode(bytes);
  } catch {
    throw new LobbyFormatError(path, "string is not valid UTF-8");
  }
}

/** Turns protobuf-es reader errors (premature EOF, bad varint, illegal tag) into one readable reason. */
function readerFailure(error: unknown): string {
  if (!(error instanceof Error)) return `malformed input (${String(error)})`;
  if (error.message === "premature EOF" || error.message.includes("outside the bounds")) return truncated;
  if (error.message === "invalid varint") return "malformed varint (longer than 10 bytes)";
  return `malformed input (${error.message})`;
}
