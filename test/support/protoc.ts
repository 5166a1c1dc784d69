// `protoc --decode` against the project's .proto files of one wire layout, recursively: every
// TypedMessage's value is decoded again as the type it names, so a whole AddInboundRequest comes out
// as one text tree. A field number the layout does not declare shows up as a bare number (unknown
// field), a wrong wire type makes protoc fail: both are what the golden tests look for.

import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { LAYOUT_FACTS, type WireLayout } from "../../src/cores/wire-layout.ts";

const PROTO_ROOT = join(import.meta.dirname, "../../proto");

const VARIANT_FILES = {
  r6: "xray/app/proxyman_r6.proto",
  r7: "xray/app/proxyman_r7.proto",
  r8: "xray/app/proxyman_r8.proto",
  legacy: "xray/proxy/shadowsocks_2022_legacy.proto",
  account: "xray/proxy/shadowsocks_2022.proto",
  base: "xray/transport/splithttp_base.proto",
  keepalive: "xray/transport/splithttp.proto",
} as const;

function protoFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return protoFiles(path);
    return name.endsWith(".proto") ? [relative(PROTO_ROOT, path)] : [];
  });
}

/** The .proto files of one layout: the shared ones plus its own variants. */
export function layoutProtoFiles(layout: WireLayout): string[] {
  const facts = LAYOUT_FACTS[layout];
  if (facts.flavor === "v2ray") return protoFiles(join(PROTO_ROOT, "v2ray"));
  const variants = new Set<string>(Object.values(VARIANT_FILES));
  const shared = protoFiles(join(PROTO_ROOT, "xray")).filter((file) => !variants.has(file));
  const own: string[] = [VARIANT_FILES[facts.receiver as "r6" | "r7" | "r8"]];
  if (facts.ss2022 !== "none") own.push(VARIANT_FILES[facts.ss2022]);
  if (facts.xhttp !== "none") own.push(VARIANT_FILES[facts.xhttp]);
  return [...shared, ...own];
}

export class ProtocError extends Error {}

/** One `protoc --decode` run; throws ProtocError with protoc's message when the bytes do not parse. */
export function protocDecode(layout: WireLayout, typeName: string, bytes: Uint8Array): string {
  const result = spawnSync(
    "protoc",
    [`--proto_path=${PROTO_ROOT}`, `--decode=${typeName}`, ...layoutProtoFiles(layout)],
    { input: bytes, encoding: "buffer" },
  );
  if (result.status !== 0) {
    throw new ProtocError(`protoc --decode=${typeName} (${layout}): ${result.stderr.toString().trim()}`);
  }
  return result.stdout.toString();
}

/** `protoc --encode` of text format against one layout's files: reference bytes written independently of the builder. */
export function protocEncode(layout: WireLayout, typeName: string, text: string): Uint8Array {
  const result = spawnSync(
    "protoc",
    [`--proto_path=${PROTO_ROOT}`, `--encode=${typeName}`, ...layoutProtoFiles(layout)],
    { input: Buffer.from(text, "utf8"), encoding: "buffer" },
  );
  if (result.status !== 0) {
    throw new ProtocError(`protoc --encode=${typeName} (${layout}): ${result.stderr.toString().trim()}`);
  }
  return new Uint8Array(result.stdout);
}

/** Decodes `bytes` as `typeName`, then every nested TypedMessage value as its own type. */
export function protocDecodeTree(layout: WireLayout, typeName: string, bytes: Uint8Array): string {
  const lines = protocDecode(layout, typeName, bytes).split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const type = /^(\s*)type: "(.*)"$/.exec(line);
    const value = /^(\s*)value: "(.*)"$/.exec(lines[i + 1] ?? "");
    if (type === null || value === null || type[1] !== value[1]) {
      out.push(line);
      continue;
    }
    const indent = type[1] ?? "";
    out.push(line, `${indent}value <${type[2]}> {`);
    const inner = protocDecodeTree(layout, type[2] ?? "", unescapeC(value[2] ?? ""));
    for (const innerLine of inner.split("\n")) if (innerLine !== "") out.push(`${indent}  ${innerLine}`);
    out.push(`${indent}}`);
    i++;
  }
  return out.join("\n");
}

/** Lines that name a field by number: fields the layout's .proto files do not declare. */
export function unknownFields(tree: string): string[] {
  return tree.split("\n").filter((line) => /^\s*\d+(: | \{)/.test(line));
}

/** protoc prints bytes C-escaped: \n \r \t \" \' \\ and three-digit octal. */
function unescapeC(text: string): Uint8Array {
  const bytes: number[] = [];
  const named: Record<string, number> = { n: 10, r: 13, t: 9, '"': 34, "'": 39, "\\": 92 };
  for (let i = 0; i < text.length; i++) {
    const char = text[i] ?? "";
    if (char !== "\\") {
      bytes.push(...Buffer.from(char, "latin1"));
      continue;
    }
    const next = text[i + 1] ?? "";
    if (next in named) {
      bytes.push(named[next] ?? 0);
      i++;
    } else if (/[0-7]/.test(next)) {
      const octal = /^[0-7]{1,3}/.exec(text.slice(i + 1))?.[0] ?? "0";
      bytes.push(Number.parseInt(octal, 8));
      i += octal.length;
    } else {
      throw new Error(`unexpected escape \\${next} in protoc output`);
    }
  }
  return new Uint8Array(bytes);
}
