// Test support: fast-check generators of lobby messages in their JSON form (any subset of fields, values
// across the whole range of each type, any Unicode text) and of unknown fields to splice into encodings.
import type { JsonObject } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import type { LobbyMessageName } from "./codec.ts";

const uint32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String);
const text = fc.string({ unit: "binary", maxLength: 40 });

// Plain prototypes: fast-check otherwise also makes null-prototype objects, which deepEqual tells apart.
const optional = { requiredKeys: [] as never[], noNullPrototype: true };

const clientHello = fc.record({ version: uint32, client_session_need: uint32, engine: int32 }, optional);

const request = fc.record({ server_region: uint32, custom_game_id: uint64 }, optional);

const entry = fc.record(
  {
    lobby_id: uint64,
    custom_game_id: uint64,
    lobby_name: text,
    member_count: uint32,
    leader_account_id: uint32,
    leader_name: text,
    custom_map_name: text,
    max_player_count: uint32,
    server_region: uint32,
    has_pass_key: fc.boolean(),
  },
  optional,
);

// An empty repeated field is indistinguishable from an absent one on the wire, so present means non-empty.
const response = fc.record({ lobbies: fc.array(entry, { minLength: 1, maxLength: 12 }) }, optional);

export const lobbyJson: Record<LobbyMessageName, fc.Arbitrary<JsonObject>> = {
  ClientHello: clientHello,
  JoinableCustomLobbiesRequest: request,
  JoinableCustomLobbiesResponseEntry: entry,
  JoinableCustomLobbiesResponse: response,
};

/**
 * Bytes of one or more unknown fields, numbered above every field the schema uses (12 and up) so that
 * appending them to an encoding keeps it in the order the encoder writes.
 */
export const unknownFieldBytes: fc.Arbitrary<Uint8Array> = fc
  .array(
    fc.record({
      fieldNo: fc.integer({ min: 12, max: 2 ** 29 - 1 }),
      value: fc.oneof(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => ({ wireType: WireType.Varint, v })),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => ({ wireType: WireType.Bit64, v })),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => ({ wireType: WireType.Bit32, v: BigInt(v) })),
        fc.uint8Array({ maxLength: 20 }).map((b) => ({ wireType: WireType.LengthDelimited, b })),
      ),
    }),
    { minLength: 1, maxLength: 5 },
  )
  .map((fields) => {
    const writer = new BinaryWriter();
    for (const { fieldNo, value } of fields) {
      writer.tag(fieldNo, value.wireType);
      if ("b" in value) writer.bytes(value.b);
      else if (value.wireType === WireType.Varint) writer.uint64(value.v);
      else if (value.wireType === WireType.Bit64) writer.fixed64(value.v);
      else writer.fixed32(Number(value.v));
    }
    return writer.finish();
  });
