// The public face of src/lobby: binary and JSON encode/decode for each of the four lobby messages. Every
// failure on untrusted input is a LobbyFormatError (a ValidationError) whose message names the field.
import type { DescMessage, JsonObject, MessageShape } from "@bufbuild/protobuf";
import {
  ClientHelloSchema,
  JoinableCustomLobbiesRequestSchema,
  JoinableCustomLobbiesResponseEntrySchema,
  JoinableCustomLobbiesResponseSchema,
} from "../gen/lobby_pb.ts";
import { messageFromJson, messageToJson } from "./json.ts";
import { countUnknownFields, decodeMessage, encodeMessage } from "./wire.ts";

export type LobbyCodec<Desc extends DescMessage> = {
  readonly schema: Desc;
  /** Binary wire format; throws LobbyFormatError if a value set in code is out of range. */
  encode(message: MessageShape<Desc>): Uint8Array;
  /** Throws LobbyFormatError for truncated or malformed bytes; unknown fields are kept for encode. */
  decode(bytes: Uint8Array): MessageShape<Desc>;
  /** snake_case keys, 64-bit integers as decimal strings, only the fields that are present. */
  toJson(message: MessageShape<Desc>): JsonObject;
  /** Parsed JSON (e.g. from JSON.parse) to a message; throws LobbyFormatError naming the bad key. */
  fromJson(json: unknown): MessageShape<Desc>;
  /** Unknown fields, including those of nested messages; JSON cannot carry them. */
  countUnknownFields(message: MessageShape<Desc>): number;
};

function codecFor<Desc extends DescMessage>(schema: Desc): LobbyCodec<Desc> {
  return {
    schema,
    encode: (message) => encodeMessage(schema, message),
    decode: (bytes) => decodeMessage(schema, bytes),
    toJson: (message) => messageToJson(schema, message),
    fromJson: (json) => messageFromJson(schema, json),
    countUnknownFields: (message) => countUnknownFields(schema, message),
  };
}

export const ClientHelloCodec = codecFor(ClientHelloSchema);
export const JoinableCustomLobbiesRequestCodec = codecFor(JoinableCustomLobbiesRequestSchema);
export const JoinableCustomLobbiesResponseEntryCodec = codecFor(JoinableCustomLobbiesResponseEntrySchema);
export const JoinableCustomLobbiesResponseCodec = codecFor(JoinableCustomLobbiesResponseSchema);

/** The codecs by message name, as the CLI and the docs spell them. */
export const lobbyCodecs = {
  ClientHello: ClientHelloCodec,
  JoinableCustomLobbiesRequest: JoinableCustomLobbiesRequestCodec,
  JoinableCustomLobbiesResponseEntry: JoinableCustomLobbiesResponseEntryCodec,
  JoinableCustomLobbiesResponse: JoinableCustomLobbiesResponseCodec,
} as const;

export type LobbyMessageName = keyof typeof lobbyCodecs;

export function isLobbyMessageName(name: string): name is LobbyMessageName {
  return Object.hasOwn(lobbyCodecs, name);
}

/** The codec for a name chosen at run time (the CLI), typed for whichever message it is. */
export function lobbyCodecByName(name: LobbyMessageName): LobbyCodec<DescMessage> {
  return lobbyCodecs[name];
}
