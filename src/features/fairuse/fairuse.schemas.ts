// The fair-use settings and a user's fair-use view (docs/FAIR-USE.md, docs/API.md "Fair use").
import { Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

const settingsFields = {
  default_ip_limit: Type.Integer({
    minimum: 0,
    maximum: 1000,
    description: "the ip_limit of users whose own is null; 0: unlimited (the default)",
  }),
  window_seconds: Type.Integer({
    minimum: 60,
    maximum: 86_400,
    description: "the sliding window: distinct addresses seen within it count (default 600)",
  }),
  ipv4_per_24: Type.Boolean({
    description: "count IPv4 addresses per /24 (carrier NAT); IPv6 always counts per /64 (default false)",
  }),
  allow_list: Type.Array(Type.String({ minLength: 1, maxLength: 64, format: "line" }), {
    maxItems: 1000,
    description: "IPv4/IPv6 addresses or CIDRs never counted",
  }),
  block_seconds: Type.Array(Type.Integer({ minimum: 10, maximum: 31_536_000 }), {
    minItems: 1,
    maxItems: 10,
    description:
      "block periods by repeat, in seconds: the first block lasts the first, the next the second…, the last repeats (default 600, 3600, 86400)",
  }),
  forget_hours: Type.Integer({
    minimum: 1,
    maximum: 8760,
    description:
      "a block this long after the last one ended starts from the first period again (default 168)",
  }),
  warn_grace_seconds: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    description:
      "how long a warning stands before the block, if the user stays over the limit (default 60; 0: warn and block at once)",
  }),
};

export const FairUseSettings = Type.Object(settingsFields);
export const FairUseSettingsUpdate = Type.Partial(
  Type.Object(settingsFields, { additionalProperties: false }),
  {
    additionalProperties: false,
  },
);

export const UserFairUse = Type.Object({
  user_id: Uuid,
  ip_limit: Type.Union([Type.Integer(), Type.Null()], { description: "the user's own (null: the default)" }),
  effective_ip_limit: Type.Integer({ description: "the limit applied; 0: unlimited" }),
  blocked_until: Type.Union([Timestamp, Type.Null()], {
    description: "blocked until then; null: not blocked",
  }),
  addresses: Type.Array(
    Type.Object({
      ip: Type.String(),
      key: Type.Union([Type.String(), Type.Null()], {
        description:
          "what it counts as (the address, its /24, its IPv6 /64); null: allow-listed, not counted",
      }),
      server_id: Uuid,
      last_seen: Timestamp,
    }),
    {
      description:
        "source addresses in the window, newest first, as this panel instance gathered them from the agents",
    },
  ),
  blocks: Type.Array(
    Type.Object({
      id: Uuid,
      started_at: Timestamp,
      until: Timestamp,
      ended_at: Type.Union([Timestamp, Type.Null()]),
      end_reason: Type.Union([Type.String(), Type.Null()], {
        description: "ended | limit_lifted; null: still blocked",
      }),
      strike: Type.Integer(),
      address_count: Type.Integer(),
      ip_limit: Type.Integer(),
      addresses: Type.Array(Type.String(), { description: "the address keys that were counted" }),
    }),
    { description: "the last 50 blocks, newest first" },
  ),
});
