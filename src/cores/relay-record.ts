// What a relayed core call changes in the desired state the node agent keeps (node/desired-state.ts):
// AddInbound / RemoveInbound / AlterInbound (AddUser, RemoveUser), read from the request bytes. The
// fields read here (the inbound's tag, the operation's type, the user's email) have the same numbers
// in V2Ray 4.x and in every Xray layout, so one reader serves all of them.
// An AddInbound that carries users inline (inline-users.ts) is recorded as the inbound without them
// plus one AlterInbound AddUser per user, the very bytes the panel's AddUser of that user sends: the
// agent's re-apply, a later RemoveUser and its connection cuts then treat those users exactly as
// users that came by AddUser (a user kept inside the stored AddInbound would come back on every
// re-apply after the panel removed it).

import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { concat, inlineUsersFieldOf } from "./inbound-builder/inline-users.ts";

export type DesiredChange =
  | { kind: "add-inbound"; tag: string }
  | { kind: "remove-inbound"; tag: string }
  | { kind: "add-user"; tag: string; email: string }
  | { kind: "remove-user"; tag: string; email: string };

/** A change with the call to store for it (the one a re-apply sends). */
export type RecordedChange = { change: DesiredChange; path: string; request: Uint8Array };

/** Pre-25.1 Xray's SS-2022 holds its own User (key 1, email 2, level 3) inline, not protocol.User. */
const SS2022_PROXY = "xray.proxy.shadowsocks_2022.MultiUserServerConfig";
const SS2022_LEGACY_USER = "xray.proxy.shadowsocks_2022.User";

/**
 * Every change a successful call makes, in order, each with the call to store: one for most calls;
 * for an AddInbound with users inline, the inbound without them first, then one AddUser per user.
 * Anything unrecognised: none.
 */
export function changesOf(path: string, request: Uint8Array): RecordedChange[] {
  const method = path.slice(path.lastIndexOf("/") + 1);
  try {
    if (method === "AddInbound") return addInbound(path, request);
    if (method === "RemoveInbound") {
      const tag = text(field(request, 1, WireType.LengthDelimited));
      return tag === undefined ? [] : [{ change: { kind: "remove-inbound", tag }, path, request }];
    }
    if (method === "AlterInbound") {
      const change = alteration(request);
      return change === null ? [] : [{ change, path, request }];
    }
  } catch {
    return [];
  }
  return [];
}

function addInbound(path: string, request: Uint8Array): RecordedChange[] {
  const inbound = field(request, 1, WireType.LengthDelimited);
  const tag = inbound === undefined ? undefined : text(field(inbound, 1, WireType.LengthDelimited));
  if (tag === undefined) return [];
  const split = splitInlineOrNull(request);
  if (split === null || split.users.length === 0) {
    return [{ change: { kind: "add-inbound", tag }, path, request }];
  }
  const service = path.slice(0, path.lastIndexOf("/"));
  const alterPath = `${service}/AlterInbound`;
  // "/v2ray.core.app.proxyman.command.HandlerService" → "v2ray.core.app.proxyman.command"
  const operationType = `${service.slice(1, service.lastIndexOf("."))}.AddUserOperation`;
  const out: RecordedChange[] = [{ change: { kind: "add-inbound", tag }, path, request: split.without }];
  for (const { email, user } of split.users) {
    out.push({
      change: { kind: "add-user", tag, email },
      path: alterPath,
      request: addUserRequest(tag, operationType, user),
    });
  }
  return out;
}

type InlineSplit = {
  /** The AddInbound request with the moved users left out. */
  without: Uint8Array;
  /** Each user as protocol.User bytes (what AddUserOperation carries), with its email. */
  users: { email: string; user: Uint8Array }[];
};

function splitInlineOrNull(request: Uint8Array): InlineSplit | null {
  try {
    return splitInline(request);
  } catch {
    return null; // an email that is not UTF-8, say: the inbound is recorded whole, as before
  }
}

/**
 * The users an AddInbound request holds in its proxy settings' users field, and the request without
 * them. A user without an email stays in the inbound (no AddUser could name it). null when the proxy
 * holds no users through the API, or the request is not laid out as the panel writes it (each
 * message once): then it is recorded whole, as before.
 */
function splitInline(request: Uint8Array): InlineSplit | null {
  const config = single(request, 1);
  if (config === null) return null;
  const proxy = single(config, 3);
  if (proxy === null) return null;
  const type = text(single(proxy, 1) ?? undefined) ?? "";
  const usersField = inlineUsersFieldOf(type);
  const value = single(proxy, 2);
  if (usersField === undefined || value === null) return null;

  const users: InlineSplit["users"] = [];
  const kept: Uint8Array[] = [];
  const reader = new BinaryReader(value);
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [number, wireType] = reader.tag();
    if (number === usersField && wireType === WireType.LengthDelimited) {
      const entry = reader.bytes();
      const user = type === SS2022_PROXY && isLegacySs2022User(entry) ? wrapLegacy(entry) : entry;
      const email = text(field(user, 2, WireType.LengthDelimited)) ?? "";
      if (email !== "") {
        users.push({ email, user });
        continue;
      }
    } else reader.skip(wireType);
    kept.push(value.subarray(start, reader.pos));
  }
  if (users.length === 0) return { without: request, users };
  const newProxy = replaced(proxy, 2, concat(kept), true);
  const newConfig = replaced(config, 3, newProxy);
  return { without: replaced(request, 1, newConfig), users };
}

/** A protocol.User always has its account (field 3, a message); the legacy SS-2022 User has none. */
function isLegacySs2022User(entry: Uint8Array): boolean {
  return field(entry, 3, WireType.LengthDelimited) === undefined;
}

/** The legacy SS-2022 User wrapped as the panel's AddUser sends it: protocol.User with it as account. */
function wrapLegacy(entry: Uint8Array): Uint8Array {
  let level = 0;
  let email: Uint8Array | undefined;
  const reader = new BinaryReader(entry);
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    if (number === 3 && wireType === WireType.Varint) level = reader.int32();
    else if (number === 2 && wireType === WireType.LengthDelimited) email = reader.bytes();
    else reader.skip(wireType);
  }
  const writer = new BinaryWriter();
  if (level !== 0) writer.tag(1, WireType.Varint).int32(level);
  if (email !== undefined && email.byteLength > 0) writer.tag(2, WireType.LengthDelimited).bytes(email);
  writer.tag(3, WireType.LengthDelimited).fork();
  writer.tag(1, WireType.LengthDelimited).string(SS2022_LEGACY_USER);
  writer.tag(2, WireType.LengthDelimited).bytes(entry);
  writer.join();
  return writer.finish();
}

/** AlterInboundRequest{tag, operation: TypedMessage{AddUserOperation{user}}}, fields in number order. */
function addUserRequest(tag: string, operationType: string, user: Uint8Array): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).string(tag);
  writer.tag(2, WireType.LengthDelimited).fork();
  writer.tag(1, WireType.LengthDelimited).string(operationType);
  writer.tag(2, WireType.LengthDelimited).fork();
  writer.tag(1, WireType.LengthDelimited).bytes(user);
  writer.join();
  writer.join();
  return writer.finish();
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

/**
 * The one occurrence of a length-delimited field, or null when it is absent or repeated (protobuf
 * would merge the occurrences of a message field: not a layout the panel writes).
 */
function single(bytes: Uint8Array, number: number): Uint8Array | null {
  const reader = new BinaryReader(bytes);
  let found: Uint8Array | null = null;
  let count = 0;
  while (reader.pos < reader.len) {
    const [fieldNo, type] = reader.tag();
    if (fieldNo === number) {
      if (type !== WireType.LengthDelimited) return null;
      found = reader.bytes();
      count += 1;
    } else reader.skip(type);
  }
  return count === 1 ? found : null;
}

/**
 * `bytes` with its one length-delimited field `number` holding `value` instead, in the same place;
 * with `omitEmpty`, an empty value leaves the field out (proto3 writes no empty bytes field).
 */
function replaced(bytes: Uint8Array, number: number, value: Uint8Array, omitEmpty = false): Uint8Array {
  const parts: Uint8Array[] = [];
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [fieldNo, type] = reader.tag();
    reader.skip(type);
    if (fieldNo === number && omitEmpty && value.byteLength === 0) continue;
    if (fieldNo === number)
      parts.push(new BinaryWriter().tag(number, WireType.LengthDelimited).bytes(value).finish());
    else parts.push(bytes.subarray(start, reader.pos));
  }
  return concat(parts);
}

function text(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}
