// JSON form of lobby messages for the CLI and for people: proto field names (snake_case) as keys, 64-bit
// integers as decimal strings (JSON numbers are exact only up to 2^53), and exactly the fields present.
import {
  create,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
  type ScalarType,
} from "@bufbuild/protobuf";
import { isReflectMessage, type ReflectMessage, reflect, type ScalarValue } from "@bufbuild/protobuf/reflect";
import { joinPath } from "../lib/json.ts";
import { LobbyFormatError } from "./error.ts";
import { checkScalar, describe, intRange, scalarTypeName } from "./scalars.ts";

/** The JSON object for a message: only fields that are set (proto2 presence), in field-number order. */
export function messageToJson<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): JsonObject {
  return reflectToJson(reflect(desc, message));
}

/** Builds a message from parsed JSON, refusing anything that would not survive encoding unchanged. */
export function messageFromJson<Desc extends DescMessage>(desc: Desc, json: unknown): MessageShape<Desc> {
  const message = create(desc);
  fillFromJson(reflect(desc, message), json, "");
  return message;
}

function reflectToJson(msg: ReflectMessage): JsonObject {
  const out: JsonObject = {};
  for (const field of msg.fields) {
    if (!msg.isSet(field)) continue;
    if (field.fieldKind === "scalar") {
      out[field.name] = scalarToJson(msg.get(field));
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      out[field.name] = [...msg.get(field)].map((item) => {
        if (!isReflectMessage(item)) throw unsupported(field);
        return reflectToJson(item);
      });
    } else {
      throw unsupported(field);
    }
  }
  return out;
}

function scalarToJson(value: ScalarValue): JsonValue {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array)
    throw new Error("bytes fields are not supported by the lobby JSON mapping");
  return value;
}

function fillFromJson(msg: ReflectMessage, json: unknown, path: string): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new LobbyFormatError(path, `expected a JSON object for ${msg.desc.name}, got ${describe(json)}`);
  }
  for (const [key, value] of Object.entries(json)) {
    const fieldPath = joinPath(path, key);
    const field = msg.fields.find((f) => f.name === key);
    if (field === undefined) throw new LobbyFormatError(fieldPath, unknownKeyReason(msg.desc, key));
    if (value === null) {
      throw new LobbyFormatError(
        fieldPath,
        "null is not a value; leave the key out to leave the field unset",
      );
    }
    if (field.fieldKind === "scalar") {
      msg.set(field, scalarFromJson(field.scalar, value, fieldPath));
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      if (!Array.isArray(value)) {
        throw new LobbyFormatError(
          fieldPath,
          `expected an array of ${field.message.name}, got ${describe(value)}`,
        );
      }
      const list = msg.get(field);
      value.forEach((item: unknown, index) => {
        const child = reflect(field.message);
        fillFromJson(child, item, `${fieldPath}[${index}]`);
        list.add(child);
      });
    } else {
      throw unsupported(field);
    }
  }
}

function scalarFromJson(type: ScalarType, value: unknown, path: string): ScalarValue {
  const range = intRange(type);
  let converted: unknown = value;
  if (range?.is64Bit === true) {
    if (typeof value !== "string") {
      throw new LobbyFormatError(
        path,
        `expected a decimal string for ${scalarTypeName(type)} (JSON numbers lose precision above 2^53), got ${describe(value)}`,
      );
    }
    if (!decimalInteger.test(value)) {
      throw new LobbyFormatError(path, `${JSON.stringify(value)} is not a decimal integer`);
    }
    converted = BigInt(value);
  } else if (range !== undefined && typeof value !== "number") {
    throw new LobbyFormatError(path, `expected a number for ${scalarTypeName(type)}, got ${describe(value)}`);
  }
  checkScalar(type, converted, path);
  return converted;
}

// Canonical decimal only: no sign on zero, no leading zeros, no exponent, hex or whitespace.
const decimalInteger = /^(0|-?[1-9][0-9]*)$/;

function unknownKeyReason(desc: DescMessage, key: string): string {
  const known = desc.fields.map((f) => f.name).join(", ");
  const camel = desc.fields.find((f) => f.localName === key || f.jsonName === key);
  const hint = camel === undefined ? "" : ` (did you mean "${camel.name}"? keys are proto field names)`;
  return `unknown key "${key}" for ${desc.name}${hint}; known keys: ${known}`;
}

function unsupported(field: DescField): Error {
  return new Error(`field ${field.name} (${field.fieldKind}) is not supported by the lobby JSON mapping`);
}
