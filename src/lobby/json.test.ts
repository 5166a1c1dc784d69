// The JSON mapping: presence survives, 64-bit integers stay exact as strings, and every value that could
// not be encoded faithfully is refused with an error that names the field or key.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ClientHelloSchema, JoinableCustomLobbiesResponseEntrySchema } from "../gen/lobby_pb.ts";
import {
  ClientHelloCodec,
  JoinableCustomLobbiesRequestCodec,
  JoinableCustomLobbiesResponseCodec,
  JoinableCustomLobbiesResponseEntryCodec,
} from "./codec.ts";
import { LobbyFormatError } from "./error.ts";

const Entry = JoinableCustomLobbiesResponseEntryCodec;
const Response = JoinableCustomLobbiesResponseCodec;

function rejects(fn: () => unknown, path: string, reason: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof LobbyFormatError, `expected LobbyFormatError, got ${String(error)}`);
    assert.equal(error.path, path);
    assert.match(error.message, reason);
    assert.ok(error.message.startsWith(path), `message should start with the path: ${error.message}`);
    assert.equal(error.code, "lobby_format_invalid");
    return true;
  });
}

test("an explicit has_pass_key: false survives JSON -> binary -> JSON", () => {
  const json = { has_pass_key: false };
  assert.deepEqual(Entry.toJson(Entry.decode(Entry.encode(Entry.fromJson(json)))), json);
});

test("absent fields stay absent; zero values that were set stay present", () => {
  assert.deepEqual(ClientHelloCodec.toJson(ClientHelloCodec.decode(new Uint8Array())), {});
  const json = { version: 0, engine: 0 };
  assert.deepEqual(
    ClientHelloCodec.toJson(
      ClientHelloCodec.decode(ClientHelloCodec.encode(ClientHelloCodec.fromJson(json))),
    ),
    json,
  );
});

test("64-bit fields are decimal strings in JSON and exact beyond 2^53", () => {
  const message = Entry.fromJson({ lobby_id: "18446744073709551615", custom_game_id: "9007199254740993" });
  assert.equal(message.lobbyId, 2n ** 64n - 1n);
  assert.equal(message.customGameId, 2n ** 53n + 1n);
  assert.deepEqual(Entry.toJson(message), {
    lobby_id: "18446744073709551615",
    custom_game_id: "9007199254740993",
  });
});

test("JSON keys follow field-number order whatever order the input used", () => {
  const out = Entry.toJson(Entry.fromJson({ has_pass_key: true, lobby_name: "a", lobby_id: "1" }));
  assert.deepEqual(Object.keys(out), ["lobby_id", "lobby_name", "has_pass_key"]);
});

test("a JSON number for a 64-bit field is refused because it may already have lost precision", () => {
  rejects(() => Entry.fromJson({ lobby_id: 5 }), "lobby_id", /decimal string for fixed64/);
});

test("64-bit strings must be canonical decimal integers", () => {
  for (const bad of ["", "0x10", "1e3", " 1", "+1", "01", "1.0", "-0"]) {
    rejects(
      () => JoinableCustomLobbiesRequestCodec.fromJson({ custom_game_id: bad }),
      "custom_game_id",
      /not a decimal integer/,
    );
  }
});

test("out-of-range values are refused with the field and the allowed range", () => {
  rejects(
    () => Entry.fromJson({ member_count: -1 }),
    "member_count",
    /-1 is out of range for uint32 \(0 to 4294967295\)/,
  );
  rejects(() => Entry.fromJson({ member_count: 4294967296 }), "member_count", /out of range for uint32/);
  rejects(() => Entry.fromJson({ lobby_id: "18446744073709551616" }), "lobby_id", /out of range for fixed64/);
  rejects(() => Entry.fromJson({ custom_game_id: "-1" }), "custom_game_id", /-1 is out of range for uint64/);
  rejects(() => ClientHelloCodec.fromJson({ engine: 2147483648 }), "engine", /out of range for int32/);
  rejects(() => ClientHelloCodec.fromJson({ engine: -2147483649 }), "engine", /out of range for int32/);
});

test("non-integers are refused", () => {
  rejects(() => ClientHelloCodec.fromJson({ version: 1.5 }), "version", /1.5 is not an integer/);
  rejects(
    () => ClientHelloCodec.fromJson({ version: "1" }),
    "version",
    /expected a number for uint32, got string "1"/,
  );
});

test("wrong JSON types are refused", () => {
  rejects(() => Entry.fromJson({ has_pass_key: "false" }), "has_pass_key", /expected a boolean/);
  rejects(() => Entry.fromJson({ lobby_name: 5 }), "lobby_name", /expected a string, got number 5/);
  rejects(() => Entry.fromJson({ lobby_name: null }), "lobby_name", /null is not a value/);
  rejects(() => Response.fromJson({ lobbies: {} }), "lobbies", /expected an array/);
  rejects(() => Response.fromJson({ lobbies: [{}, 3] }), "lobbies[1]", /expected a JSON object/);
  rejects(
    () => Response.fromJson([]),
    "",
    /expected a JSON object for JoinableCustomLobbiesResponse, got an array/,
  );
});

test("unknown keys are refused by name, with a hint for camelCase spellings", () => {
  rejects(
    () => Entry.fromJson({ lobby_idd: "1" }),
    "lobby_idd",
    /unknown key "lobby_idd" for JoinableCustomLobbiesResponseEntry/,
  );
  rejects(
    () => Response.fromJson({ lobbies: [{ hasPassKey: true }] }),
    "lobbies[0].hasPassKey",
    /did you mean "has_pass_key"/,
  );
  rejects(() => Entry.fromJson(JSON.parse('{"__proto__": {}}')), "__proto__", /unknown key "__proto__"/);
});

test("a name with a lone UTF-16 surrogate is refused instead of being mangled into U+FFFD", () => {
  rejects(() => Entry.fromJson({ leader_name: "ok \ud800" }), "leader_name", /lone UTF-16 surrogate/);
});

test("encode refuses out-of-range values set in code, naming the field", () => {
  const hello = create(ClientHelloSchema, { version: -1 });
  rejects(() => ClientHelloCodec.encode(hello), "version", /-1 is out of range for uint32/);
  const entry = create(JoinableCustomLobbiesResponseEntrySchema, { memberCount: 2.5 });
  const response = Response.fromJson({ lobbies: [{}] });
  response.lobbies.push(entry);
  rejects(() => Response.encode(response), "lobbies[1].member_count", /2.5 is not an integer/);
});
