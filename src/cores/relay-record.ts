// What a relayed core call changes in the desired state the node agent keeps (node/desired-state.ts):
// AddInbound / RemoveInbound / AlterInbound (AddUser, RemoveUser), read from the request bytes. The
// fields read here (the inbound's tag, the operation's type, the user's email) have the same numbers
// in V2Ray 4.x and in every Xray layout, so one reader serves all of them.

import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

export type DesiredChange =
  | { kind: "add-inbound"; tag: string }
  | { kind: "remove-inbound"; tag: string }
  | { kind: "add-user"; tag: string; email: string }
  | { kind: "remove-user"; tag: string; email: string };

/** The change a successful call made, or null (reads, stats, anything unrecognised). */
export function changeOf(path: string, request: Uint8Array): DesiredChange | null {
  const method = path.slice(path.lastIndexOf("/") + 1);
  try {
    if (method === "AddInbound") {
      const inbound = field(request, 1, WireType.LengthDelimited);
      const tag = inbound === undefined ? undefined : text(field(inbound, 1, WireType.LengthDelimited));
      return tag === undefined ? null : { kind: "add-inbound", tag };
    }
    if (method === "RemoveInbound") {
      const tag = text(field(request, 1, WireType.LengthDelimited));
      return tag === undefined ? null : { kind: "remove-inbound", tag };
    }
    if (method === "AlterInbound") return alteration(request);
  } catch {
    return null;
  }
  return null;
}

function alteration(request: Uint8Array): DesiredChange | null {
  const tag = text(field(request, 1, WireType.LengthDelimited));
  const operation = field(request, 2, WireType.LengthDelimited);
  if (tag === undefined || operation === undefined) return null;
  const type = text(field(operation, 1, WireType.LengthDelimited)) ?? "";
  const value = field(operation, 2, WireType.LengthDelimited) ?? new Uint8Array();
  if (type.endsWith(".AddUserOperation")) {
    const user = field(value, 1, WireType.LengthDelimited);
    const email = user === undefined ? undefined : text(field(user, 2, WireType.LengthDelimited));
    return email === undefined ? null : { kind: "add-user", tag, email };
  }
  if (type.endsWith(".RemoveUserOperation")) {
    const email = text(field(value, 1, WireType.LengthDelimited));
    return email === undefined ? null : { kind: "remove-user", tag, email };
  }
  return null;
}

/** The last occurrence of a field (protobuf's rule for a repeated singular field). */
function field(bytes: Uint8Array, number: number, wireType: WireType): Uint8Array | undefined {
  const reader = new BinaryReader(bytes);
  let found: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const [fieldNo, type] = reader.tag();
    if (fieldNo === number && type === wireType && type === WireType.LengthDelimited) found = reader.bytes();
    else reader.skip(type);
  }
  return found;
}

function text(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}
