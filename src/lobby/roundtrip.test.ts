// Property-based round trips over random lobby messages: JSON -> binary -> JSON is the identity, the
// bytes agree with protoc, and unknown fields spliced into an encoding come back unchanged.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { requires } from "../../test/support/requires.ts";
import { lobbyJson, unknownFieldBytes } from "./arbitraries.ts";
import { isLobbyMessageName, lobbyCodecByName, lobbyCodecs } from "./codec.ts";
import { hex, protocEncode, toTextFormat } from "./protoc-reference.ts";

const names = Object.keys(lobbyCodecs).filter(isLobbyMessageName);

for (const name of names) {
  const codec = lobbyCodecByName(name);
  const messages = lobbyJson[name];

  test(`${name}: JSON -> binary -> JSON returns the same JSON, and re-encoding gives the same bytes`, () => {
    fc.assert(
      fc.property(messages, (json) => {
        const bytes = codec.encode(codec.fromJson(json));
        const decoded = codec.decode(bytes);
        assert.deepEqual(codec.toJson(decoded), json);
        assert.deepEqual(codec.encode(decoded), bytes);
      }),
      { numRuns: 500 },
    );
  });

  test(`${name}: random messages encode to the same bytes as protoc --encode`, requires("protoc"), () => {
    fc.assert(
      fc.property(messages, (json) => {
        const ours = codec.encode(codec.fromJson(json));
        assert.equal(hex(ours), hex(protocEncode(name, toTextFormat(codec.schema, json))));
      }),
      { numRuns: 40 },
    );
  });

  test(`${name}: unknown fields appended to an encoding survive decode -> encode byte for byte`, () => {
    fc.assert(
      fc.property(messages, unknownFieldBytes, (json, unknown) => {
        const known = codec.encode(codec.fromJson(json));
        const input = Buffer.concat([known, unknown]);
        const decoded = codec.decode(input);
        assert.deepEqual(codec.toJson(decoded), json);
        assert.ok(codec.countUnknownFields(decoded) > 0);
        assert.equal(hex(codec.encode(decoded)), hex(input));
      }),
      { numRuns: 300 },
    );
  });
}
