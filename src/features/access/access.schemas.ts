// The seed's user access record (a user's grant on one inbound) and client configuration, plus the
// grant's sync state.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { SyncState } from "../inbounds/inbounds.schemas.ts";
import { UserCreate } from "../users/users.schemas.ts";

const Protocol = Type.Union([
  Type.Literal("vmess"),
  Type.Literal("vless"),
  Type.Literal("trojan"),
  Type.Literal("shadowsocks"),
]);

export const AccessRecord = Type.Object({
  id: Uuid,
  user_id: Uuid,
  server_inbound_id: Uuid,
  proxy_user_id: Type.String({
    description: "the user's id on the core (its client email); unique per user per server",
  }),
  level: Type.Integer(),
  is_active: Type.Boolean(),
  is_own: Type.Boolean({
    description:
      "given to the user directly; false: held only through the user's groups (docs/GROUPS.md), revoked when no group gives it any more",
  }),
  sync_state: SyncState,
  sync_error: Type.Union([Type.String(), Type.Null()]),
  uplink_bytes: Type.Integer({
    description: "traffic counted for the user on this server (carried by their first grant there)",
  }),
  downlink_bytes: Type.Integer(),
  created_at: Timestamp,
  uri: Type.Optional(
    Type.String({
      description: "only with include_uris=true: the first of `links` (absent when it is empty)",
    }),
  ),
  links: Type.Optional(
    Type.Array(Type.Object({ remark: Type.String(), uri: Type.String({ description: "protocol://…" }) }), {
      description:
        "only with include_uris=true: the grant's links as the user's /sub writes them, one per enabled host of the inbound (one without hosts)",
    }),
  ),
  protocol: Type.Optional(Protocol),
  server_name: Type.Optional(Type.String()),
  inbound_tag: Type.Optional(Type.String()),
});
export type AccessRecord = Static<typeof AccessRecord>;

export const GrantCreate = Type.Object(
  {
    user_id: Type.Optional(Uuid),
    name: Type.Optional(UserCreate.properties.name),
    comment: UserCreate.properties.comment,
    telegram_id: UserCreate.properties.telegram_id,
    level: Type.Optional(Type.Integer({ minimum: 0, maximum: 255, default: 0 })),
  },
  {
    additionalProperties: false,
    description: "user_id of an existing user, or name (+ comment, telegram_id) of a new one",
  },
);
export type GrantCreate = Static<typeof GrantCreate>;

export const BulkGrantCreate = Type.Object(
  {
    user_ids: Type.Array(Uuid, {
      minItems: 1,
      maxItems: 10_000,
      description: "existing users; duplicates count once",
    }),
    level: Type.Optional(Type.Integer({ minimum: 0, maximum: 255, default: 0 })),
  },
  { additionalProperties: false },
);
export type BulkGrantCreate = Static<typeof BulkGrantCreate>;

export const BulkGrantResult = Type.Object({
  server_inbound_id: Uuid,
  requested: Type.Integer({ description: "distinct user ids asked for" }),
  granted: Type.Integer({ description: "new grants stored" }),
  already_granted: Type.Array(Uuid),
  unknown_users: Type.Array(Uuid),
  sync: Type.Object({ synced: Type.Integer(), pending: Type.Integer(), error: Type.Integer() }),
  duration_ms: Type.Integer(),
  results: Type.Array(
    Type.Object({
      user_id: Uuid,
      access_id: Uuid,
      proxy_user_id: Type.String(),
      sync_state: SyncState,
      sync_error: Type.Union([Type.String(), Type.Null()]),
    }),
    { description: "one per new grant" },
  ),
});
export type BulkGrantResult = Static<typeof BulkGrantResult>;

export const ClientConfig = Type.Object({
  user_id: Uuid,
  server_name: Type.String(),
  inbound_tag: Type.String(),
  protocol: Protocol,
  remark: Type.String({
    description: "the link's name, as in the user's /sub (unique within the user's links)",
  }),
  uri: Type.String({ description: "protocol://…" }),
  qr_code: Type.Union([Type.String({ description: "data:image/svg+xml;base64,…" }), Type.Null()], {
    description: "null unless ?include_qr=true: then the link's QR code as an SVG data: URI",
  }),
});
export type ClientConfig = Static<typeof ClientConfig>;

export const QrQuery = Type.Object(
  { include_qr: Type.Optional(Type.Boolean({ default: false, description: "add each link's QR code" })) },
  { additionalProperties: false },
);

export const AccessQuery = Type.Object(
  { include_uris: Type.Optional(Type.Boolean({ default: false })) },
  { additionalProperties: false },
);

export const GrantParams = Type.Object(
  {
    server_id: Uuid,
    inbound_id: Uuid,
    email: Type.String({
      pattern: "^[A-Za-z0-9._@-]{1,128}$",
      description: "the grant's proxy_user_id, or the user's uuid",
    }),
  },
  { additionalProperties: false },
);
export const UserIdParams = Type.Object({ user_id: Uuid }, { additionalProperties: false });
export const UserInboundParams = Type.Object(
  { user_id: Uuid, inbound_id: Uuid },
  { additionalProperties: false },
);
