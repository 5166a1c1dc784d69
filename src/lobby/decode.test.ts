// Decoding untrusted bytes: every malformed input fails with a LobbyFormatError that says what is wrong
// and where, stricter than protobuf-es alone (wrong wire types, invalid UTF-8, overlong fields).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ClientHelloCodec,
  JoinableCustomLobbiesResponseCodec,
  JoinableCustomLobbiesResponseEntryCodec,
} from "./codec.ts";
import { LobbyFormatError } from "./error.ts";

const Entry = JoinableCustomLobbiesResponseEntryCodec;
const Response = JoinableCustomLobbiesResponseCodec;

function bytes(hexText: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hexText.replace(/\s+/g, ""), "hex"));
}

function decodeFails(
  decode: (b: Uint8Array) => unknown,
  hexText: string,
  path: string,
  reason: RegExp,
): void {
  assert.throws(
    () => decode(bytes(hexText)),
    (error: unknown) => {
      assert.ok(error instanceof LobbyFormatError, `expected LobbyFormatError, got ${String(error)}`);
      assert.equal(error.path, path);
      assert.match(error.reason, reason);
      return true;
    },
  );
}

test("a message cut inside a fixed64 is reported as truncated at that field", () => {
  decodeFails((b) => Response.decode(b), "0a0b 09 ffffffff", "lobbies[0]", /truncated/);
  decodeFails((b) => Entry.decode(b), "09 ffffffffffff", "lobby_id", /truncated/);
});

test("a cut inside a varint or a string is reported as truncated", () => {
  decodeFails((b) => ClientHelloCodec.decode(b), "08 ff", "version", /truncated/);
  decodeFails((b) => Entry.decode(b), "1a 05 6162", "lobby_name", /truncated/);
  decodeFails((b) => ClientHelloCodec.decode(b), "80", "", /truncated/);
});

test("an entry whose length prefix is too short is refused rather than misread", () => {
  decodeFails((b) => Response.decode(b), "0a02 20 9601", "lobbies[0].member_count", /runs past the end/);
});

test("a known field with the wrong wire type is refused, naming the field", () => {
  decodeFails(
    (b) => ClientHelloCodec.decode(b),
    "0a 01 41",
    "version",
    /wire type 2 \(LengthDelimited\) does not fit uint32/,
  );
  decodeFails((b) => Entry.decode(b), "08 05", "lobby_id", /does not fit fixed64, which uses wire type 1/);
  decodeFails(
    (b) => Response.decode(b),
    "0a00 08 01",
    "lobbies[1]",
    /does not fit message JoinableCustomLobbiesResponseEntry/,
  );
});

test("invalid UTF-8 in a name is refused instead of being replaced with U+FFFD", () => {
  decodeFails((b) => Entry.decode(b), "1a 02 c328", "lobby_name", /not valid UTF-8/);
  decodeFails((b) => Response.decode(b), "0a00 0a04 3202 eda0", "lobbies[1].leader_name", /not valid UTF-8/);
});

test("illegal tags, wire types and overlong varints are refused", () => {
  decodeFails((b) => ClientHelloCodec.decode(b), "00", "", /illegal tag: field no 0/);
  decodeFails((b) => ClientHelloCodec.decode(b), "0f", "", /wire type 7/);
  decodeFails((b) => ClientHelloCodec.decode(b), `08 ${"ff".repeat(10)} 01`, "version", /malformed varint/);
  decodeFails((b) => ClientHelloCodec.decode(b), "63 6b 64", "", /invalid end group tag/);
});

test("deeply nested unknown groups hit the recursion limit instead of the stack", () => {
  decodeFails((b) => ClientHelloCodec.decode(b), "63".repeat(100_000), "", /recursion/);
});

test("an absurd length prefix is reported as truncated without allocating it", () => {
  decodeFails((b) => Entry.decode(b), "1a ffffffff0f", "lobby_name", /truncated/);
  decodeFails((b) => ClientHelloCodec.decode(b), "62 ffffffff0f", "", /truncated/);
});

test("duplicate scalar fields keep the last value, as protoc does", () => {
  assert.deepEqual(ClientHelloCodec.toJson(ClientHelloCodec.decode(bytes("0801 0802"))), { version: 2 });
});

test("unknown fields are kept through decode -> encode", () => {
  const withUnknown = bytes("0807 6005 7d01020304 8106 0102030405060708");
  const decoded = ClientHelloCodec.decode(withUnknown);
  assert.equal(ClientHelloCodec.countUnknownFields(decoded), 3);
  assert.deepEqual(ClientHelloCodec.encode(decoded), withUnknown);
});

test("a leading U+FEFF in a name is text, kept through decode -> encode", () => {
  const encoded = Entry.encode(Entry.fromJson({ lobby_name: "\uFEFFx" }));
  assert.equal(Entry.decode(encoded).lobbyName, "\uFEFFx");
});
