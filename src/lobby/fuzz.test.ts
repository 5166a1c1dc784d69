// Fuzzing the decoder: random, truncated and mutated bytes either decode to a message that re-encodes
// cleanly or fail with a LobbyFormatError; no other exception escapes and no input makes it hang.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import { lobbyJson } from "./arbitraries.ts";
import { isLobbyMessageName, type LobbyCodec, lobbyCodecByName, lobbyCodecs } from "./codec.ts";
import { LobbyFormatError } from "./error.ts";

const names = Object.keys(lobbyCodecs).filter(isLobbyMessageName);
// The node:test timeout is the hang detector: a decoder stuck in a loop fails the test instead of CI.
const timeout = 60_000;

/** The decoder's contract on arbitrary bytes. */
function decodeHonours(codec: LobbyCodec<DescMessage>, bytes: Uint8Array): void {
  let message: ReturnType<typeof codec.decode>;
  try {
    message = codec.decode(bytes);
  } catch (error) {
    assert.ok(
      error instanceof LobbyFormatError,
      `decode threw something other than LobbyFormatError: ${error}`,
    );
    assert.ok(error.message.length > 0);
    return;
  }
  // Whatever decodes is a valid message: it encodes, maps to JSON, and reads back the same.
  const json = codec.toJson(message);
  const reencoded = codec.encode(message);
  assert.deepEqual(codec.toJson(codec.decode(reencoded)), json);
}

for (const name of names) {
  const codec = lobbyCodecByName(name);
  const valid = lobbyJson[name].map((json) => codec.encode(codec.fromJson(json)));

  test(`${name}: random bytes decode or fail with LobbyFormatError`, { timeout }, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => decodeHonours(codec, bytes)),
      { numRuns: 3000 },
    );
  });

  test(`${name}: every prefix of a valid encoding decodes or fails with LobbyFormatError`, {
    timeout,
  }, () => {
    fc.assert(
      fc.property(valid, (bytes) => {
        for (let end = 0; end <= bytes.length; end++) decodeHonours(codec, bytes.subarray(0, end));
      }),
      { numRuns: 200 },
    );
  });

  test(`${name}: valid encodings with bytes flipped, inserted or dropped never break the contract`, {
    timeout,
  }, () => {
    const mutated = fc
      .tuple(valid, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("flip", "insert", "drop"))
      .map(([bytes, at, byte, how]) => {
        const copy = [...bytes];
        const index = copy.length === 0 ? 0 : at % copy.length;
        if (how === "flip" && copy.length > 0) copy[index] = byte;
        else if (how === "insert") copy.splice(index, 0, byte);
        else copy.splice(index, 1);
        return Uint8Array.from(copy);
      });
    fc.assert(
      fc.property(mutated, (bytes) => decodeHonours(codec, bytes)),
      { numRuns: 2000 },
    );
  });
}

test("hostile inputs fail fast: huge lengths, endless groups, a megabyte of continuation bits", {
  timeout,
}, () => {
  const codec = lobbyCodecByName("JoinableCustomLobbiesResponse");
  const hostile = [
    Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
    new Uint8Array(1_000_000).fill(0x63),
    new Uint8Array(1_000_000).fill(0x80),
    new Uint8Array(1_000_000).fill(0x0a),
  ];
  for (const bytes of hostile) {
    assert.throws(() => codec.decode(bytes), LobbyFormatError);
  }
});
