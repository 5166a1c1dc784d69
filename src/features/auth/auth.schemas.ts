// Request and response shapes of the auth and API-key endpoints.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

export const TokenRequest = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 64 }),
    password: Type.String({ minLength: 1, maxLength: 256 }),
  },
  { additionalProperties: false },
);
export type TokenRequest = Static<typeof TokenRequest>;

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal("Bearer"),
  expires_in: Type.Integer({ description: "seconds" }),
});

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()]),
  last_used_at: Type.Union([Timestamp, Type.Null()]),
});

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: "the secret; shown only in this response" }),
});

export const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  },
  { additionalProperties: false },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;
