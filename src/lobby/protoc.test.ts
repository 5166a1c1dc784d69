// The lobby codec writes exactly the bytes protoc writes for the same message, and reads protoc's bytes
// back to the same values: one table of cases, each given once as JSON and rendered to text format.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { JsonObject } from "@bufbuild/protobuf";
import { requires } from "../../test/support/requires.ts";
import { type LobbyMessageName, lobbyCodecByName } from "./codec.ts";
import { Engine } from "./engine.ts";
import { hex, protocDecode, protocEncode, protocVersion, toTextFormat } from "./protoc-reference.ts";

/** The comparisons skip without protoc; the first test below still fails then, so it is never silent. */
const needs = requires("protoc");
const u32Max = 4294967295;
const u64Max = "18446744073709551615";

type Case = { title: string; message: LobbyMessageName; json: JsonObject; hex?: string };

const manyEntries = Array.from({ length: 300 }, (_, i): JsonObject => {
  const entry: JsonObject = {
    lobby_id: String(2n ** 64n - 1n - BigInt(i) * 7919n),
    lobby_name: `lobby ${i}`,
  };
  if (i % 2 === 0) entry.member_count = i % 24;
  if (i % 3 === 0) entry.has_pass_key = i % 6 === 0;
  if (i % 5 === 0) entry.custom_game_id = String(2n ** 53n + BigInt(i));
  return entry;
});

const cases: Case[] = [
  { title: "empty ClientHello", message: "ClientHello", json: {}, hex: "" },
  { title: "empty request", message: "JoinableCustomLobbiesRequest", json: {}, hex: "" },
  { title: "empty entry", message: "JoinableCustomLobbiesResponseEntry", json: {}, hex: "" },
  { title: "empty response", message: "JoinableCustomLobbiesResponse", json: {}, hex: "" },
  {
    title: "ClientHello with explicit zeros (proto2 presence writes them)",
    message: "ClientHello",
    json: { version: 0, client_session_need: 0, engine: 0 },
    hex: "080018002800",
  },
  {
    title: "ClientHello at the maximum of every field",
    message: "ClientHello",
    json: { version: u32Max, client_session_need: u32Max, engine: 2147483647 },
  },
  { title: "engine at int32 minimum", message: "ClientHello", json: { engine: -2147483648 } },
  {
    title: "engine -1 as a 10-byte varint",
    message: "ClientHello",
    json: { engine: -1 },
    hex: "28ffffffffffffffffff01",
  },
  {
    title: "a second-generation engine hello",
    message: "ClientHello",
    json: { version: 7, engine: Engine.Source2 },
  },
  {
    title: "request at the minimum",
    message: "JoinableCustomLobbiesRequest",
    json: { server_region: 0, custom_game_id: "0" },
  },
  {
    title: "request at the maximum",
    message: "JoinableCustomLobbiesRequest",
    json: { server_region: u32Max, custom_game_id: u64Max },
  },
  {
    title: "custom_game_id above 2^53",
    message: "JoinableCustomLobbiesRequest",
    json: { custom_game_id: "9007199254740993" },
    hex: "108180808080808010",
  },
  {
    title: "entry with every field at its minimum",
    message: "JoinableCustomLobbiesResponseEntry",
    json: {
      ...{ lobby_id: "0", custom_game_id: "0", lobby_name: "", member_count: 0, leader_account_id: 0 },
      ...{ leader_name: "", custom_map_name: "", max_player_count: 0, server_region: 0, has_pass_key: false },
    },
  },
  {
    title: "entry with every field at its maximum",
    message: "JoinableCustomLobbiesResponseEntry",
    json: {
      ...{ lobby_id: u64Max, custom_game_id: u64Max, lobby_name: "x".repeat(300), member_count: u32Max },
      ...{
        leader_account_id: u32Max,
        leader_name: "leader",
        custom_map_name: "map",
        max_player_count: u32Max,
      },
      ...{ server_region: u32Max, has_pass_key: true },
    },
  },
  {
    title: "UTF-8 names, quotes, control characters and a leading BOM",
    message: "JoinableCustomLobbiesResponseEntry",
    json: {
      lobby_name: "Ünïcödé лобби 大厅 🎮",
      leader_name: 'say "hi" \\ tab\there\nnew line \u0001',
      custom_map_name: "\uFEFF👩‍👩‍👧 map",
    },
  },
  {
    title: "the CLI acceptance message",
    message: "JoinableCustomLobbiesResponse",
    json: { lobbies: [{ lobby_id: u64Max, has_pass_key: false }] },
    hex: "0a0b09ffffffffffffffff5800",
  },
  {
    title: "response of empty entries",
    message: "JoinableCustomLobbiesResponse",
    json: { lobbies: [{}, {}] },
  },
  {
    title: "response with 300 entries",
    message: "JoinableCustomLobbiesResponse",
    json: { lobbies: manyEntries },
  },
];

test("protoc is installed: these tests compare against it, and their skipping is never silent", () => {
  assert.match(protocVersion(), /^libprotoc \d+\.\d+/);
});

for (const { title, message, json, hex: expectedHex } of cases) {
  test(`${message}: ${title} is byte-identical with protoc both ways`, needs, () => {
    const codec = lobbyCodecByName(message);
    const ours = codec.encode(codec.fromJson(json));
    const reference = protocEncode(message, toTextFormat(codec.schema, json));
    assert.equal(hex(ours), hex(reference));
    if (expectedHex !== undefined) assert.equal(hex(ours), expectedHex);
    assert.deepEqual(codec.toJson(codec.decode(reference)), json);
  });
}

// A later version of the schema with fields this one does not know: a string, fixed32, sint64, bytes, a
// double at the highest field number, a group, and a field in the nested entry.
const futureProto = `syntax = "proto2";
package future;
message ClientHello {
  optional uint32 version = 1; optional string build = 2; optional uint32 client_session_need = 3;
  optional int32 engine = 5; optional fixed32 flags = 6;
  optional group Extra = 13 { optional int32 a = 1; }
  optional sint64 delta = 100; optional double score = 536870911;
}
message JoinableCustomLobbiesResponseEntry {
  optional fixed64 lobby_id = 1; optional string lobby_name = 3; optional bytes blob = 10;
  optional bool has_pass_key = 11; optional uint64 future_id = 12;
}
message JoinableCustomLobbiesResponse {
  repeated JoinableCustomLobbiesResponseEntry lobbies = 1; optional string cursor = 2;
}
`;
const futureDir = mkdtempSync(join(tmpdir(), "lobby-future-"));
writeFileSync(join(futureDir, "future.proto"), futureProto);
after(() => rmSync(futureDir, { recursive: true, force: true }));
const future = { includeDir: futureDir, file: "future.proto", packageName: "future" };

test(
  "unknown fields from a newer schema survive decode -> encode (protoc reads back the same message)",
  needs,
  () => {
    const text =
      'version: 3 build: "b1" engine: -1 flags: 7 Extra { a: -5 } delta: -9000000000 score: 1.5 ' +
      "client_session_need: 4";
    const theirs = protocEncode("ClientHello", text, future);
    const codec = lobbyCodecByName("ClientHello");
    const decoded = codec.decode(theirs);
    assert.deepEqual(codec.toJson(decoded), { version: 3, client_session_need: 4, engine: -1 });
    assert.equal(codec.countUnknownFields(decoded), 5);
    const ours = codec.encode(decoded);
    assert.equal(protocDecode("ClientHello", ours, future), protocDecode("ClientHello", theirs, future));
  },
);

test("unknown fields numbered after the known ones come back byte for byte, nested ones too", needs, () => {
  const text =
    "lobbies { lobby_id: 5 has_pass_key: false future_id: 18446744073709551615 } " +
    'lobbies { lobby_name: "x" blob: "\\000\\377" } cursor: "next"';
  const theirs = protocEncode("JoinableCustomLobbiesResponse", text, future);
  const codec = lobbyCodecByName("JoinableCustomLobbiesResponse");
  const decoded = codec.decode(theirs);
  assert.equal(codec.countUnknownFields(decoded), 3);
  assert.deepEqual(codec.toJson(decoded), {
    lobbies: [{ lobby_id: "5", has_pass_key: false }, { lobby_name: "x" }],
  });
  assert.equal(hex(codec.encode(decoded)), hex(theirs));
  assert.match(protocDecode("JoinableCustomLobbiesResponse", theirs), /12: 18446744073709551615/);
});
