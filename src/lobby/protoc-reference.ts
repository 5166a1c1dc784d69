// Test support: protoc (Debian protobuf-compiler) as the reference encoder the lobby codec is checked
// against. Nothing here skips when protoc is missing: byte equality with protoc is the point of the suite.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type DescMessage, type JsonObject, type JsonValue, ScalarType } from "@bufbuild/protobuf";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const lobbyProtoDir = join(repoRoot, "proto");

type ProtoFile = { includeDir: string; file: string; packageName: string };
const lobbyProto: ProtoFile = {
  includeDir: lobbyProtoDir,
  file: "lobby.proto",
  packageName: "portcullis.lobby",
};

/** `protoc --encode`: text format in, wire bytes out. */
export function protocEncode(messageName: string, text: string, proto: ProtoFile = lobbyProto): Uint8Array {
  return protoc([`-I${proto.includeDir}`, `--encode=${proto.packageName}.${messageName}`, proto.file], text);
}

/** `protoc --decode`: wire bytes in, text format out (non-ASCII bytes come out as octal escapes). */
export function protocDecode(messageName: string, bytes: Uint8Array, proto: ProtoFile = lobbyProto): string {
  const out = protoc(
    [`-I${proto.includeDir}`, `--decode=${proto.packageName}.${messageName}`, proto.file],
    bytes,
  );
  return Buffer.from(out).toString("utf8");
}

export function protocVersion(): string {
  return Buffer.from(protoc(["--version"], ""))
    .toString("utf8")
    .trim();
}

function protoc(args: string[], input: string | Uint8Array): Uint8Array {
  try {
    return Uint8Array.from(execFileSync("protoc", args, { input, stdio: ["pipe", "pipe", "pipe"] }));
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") {
      throw new Error("protoc is not installed (apt-get install protobuf-compiler); lobby tests need it");
    }
    const stderr = error instanceof Error && "stderr" in error ? String(error.stderr) : "";
    throw new Error(`protoc ${args.join(" ")} failed: ${stderr || String(error)}`, { cause: error });
  }
}

/** The protobuf text format of a lobby JSON object, so one table of cases feeds both encoders. */
export function toTextFormat(desc: DescMessage, json: JsonObject): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.name === key);
    if (field === undefined) throw new Error(`${desc.name} has no field ${key}`);
    if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of asArray(value))
        parts.push(`${key} { ${toTextFormat(field.message, asObject(item))} }`);
    } else if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) {
      parts.push(`${key}: ${quote(String(value))}`);
    } else {
      parts.push(`${key}: ${String(value)}`);
    }
  }
  return parts.join(" ");
}

// Text-format strings take raw UTF-8; only quotes, backslashes and control characters need escapes.
function quote(text: string): string {
  let escaped = "";
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === "\\") escaped += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) escaped += `\\${code.toString(8).padStart(3, "0")}`;
    else escaped += ch;
  }
  return `"${escaped}"`;
}

function asArray(value: JsonValue): JsonValue[] {
  if (!Array.isArray(value)) throw new Error(`expected an array, got ${JSON.stringify(value)}`);
  return value;
}

function asObject(value: JsonValue): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`expected an object, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
